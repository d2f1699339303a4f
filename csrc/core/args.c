/* args.c - the arguments of gpudev's METH_FASTCALL | METH_KEYWORDS functions: one matcher of
 * positional and keyword arguments to named parameters, with Python's own wording for
 * unknown and repeated keywords, used by every such function of the core; and sequence
 * arguments held as tuples (the rule in core.h).
 */
#include "core.h"

#include <string.h>

static int usage_error(const gd_params *p)
{
    PyErr_SetString(PyExc_TypeError, p->usage);
    return -1;
}

/* The index of parameter `name`, or -1. */
static int param_index(const gd_params *p, const char *name)
{
    for (int i = 0; p->names[i]; i++)
        if (strcmp(p->names[i], name) == 0) return i;
    return -1;
}

int gd_parse_args(PyObject **out, const gd_params *p, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs > p->positional) return usage_error(p);
    unsigned given = 0; /* bit i: parameter i has an argument */
    for (Py_ssize_t i = 0; i < nargs; i++) {
        out[i] = args[i];
        given |= 1u << i;
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        Py_ssize_t len;
        const char *name = PyUnicode_AsUTF8AndSize(key, &len);
        if (!name) return -1;
        /* f(**{'device\0x': ...}) must not pass for `device`: C strings stop at a NUL */
        int i = strlen(name) == (size_t)len ? param_index(p, name) : -1;
        if (i < 0) {
            PyObject *shown = gd_brief_repr(key);
            if (shown) PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument %U", p->fname, shown);
            Py_XDECREF(shown);
            return -1;
        }
        if (given & (1u << i)) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", p->fname, name);
            return -1;
        }
        out[i] = args[nargs + k];
        given |= 1u << i;
    }
    for (int i = 0; i < p->required; i++)
        if (!(given & (1u << i))) return usage_error(p);
    return 0;
}

int gd_parse_bool(PyObject *obj, int *out)
{
    if (!obj || obj == Py_None) return 0;
    int v = PyObject_IsTrue(obj);
    if (v < 0) return -1;
    *out = v;
    return 0;
}

PyObject *gd_tuple_of(PyObject *seq, const char *msg)
{
    PyObject *items = PySequence_Fast(seq, msg);
    /* a list is copied: it can change whenever Python code runs (core.h, args.c's rule) */
    if (items && PyList_Check(items)) Py_SETREF(items, PyList_AsTuple(items));
    return items;
}

PyObject *gd_brief_repr(PyObject *obj)
{
    PyObject *r = PyObject_Repr(obj);
    if (!r) {
        /* a list nested past the recursion limit, or a __repr__ that fails: the type still
         * names the argument; only Python's own interrupts go on */
        if (!PyErr_ExceptionMatches(PyExc_Exception)) return NULL;
        PyErr_Clear();
        return PyUnicode_FromFormat("<%.100s object>", Py_TYPE(obj)->tp_name);
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(r);
    if (n <= GD_BRIEF_REPR) return r;
    PyObject *head = PyUnicode_Substring(r, 0, GD_BRIEF_REPR - 20);
    PyObject *tail = PyUnicode_Substring(r, n - 12, n);
    Py_DECREF(r);
    PyObject *out = head && tail ? PyUnicode_FromFormat("%U...%U (%zd characters)", head, tail, n) : NULL;
    Py_XDECREF(head);
    Py_XDECREF(tail);
    return out;
}
