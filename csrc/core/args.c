/* args.c - the arguments of gpudev's METH_FASTCALL | METH_KEYWORDS functions: one matcher of
 * positional and keyword arguments to named parameters, with Python's own wording for
 * unknown and repeated keywords, used by every such function of the core.
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
        const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
        if (!name) return -1;
        int i = param_index(p, name);
        if (i < 0) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s'", p->fname, name);
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
