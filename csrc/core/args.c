/* args.c - the arguments of gpudev's METH_FASTCALL | METH_KEYWORDS functions: one matcher of
 * positional and keyword arguments to named parameters, which it reads from the function's
 * declared text signature (args.h), with Python's own wording for unknown and repeated
 * keywords, used by every such function of the core; and sequence arguments held as tuples
 * (the rule in args.h).
 */
#include "args.h"

#include <string.h>

/* ------------------------------------------------------------------------------------------
 * the declared signature (args.h), read once per function
 * ---------------------------------------------------------------------------------------- */

static int bad_declaration(const gd_params *p, const char *why)
{
    PyErr_Format(PyExc_SystemError, "%s: its signature declaration is malformed: %s", p->fname, why);
    return -1;
}

/* p's derived fields from the parameter list of "name($module, a, b=1, *, c=None)\n--\n\n" */
static int read_signature(gd_params *p)
{
    const size_t nlen = strlen(p->fname);
    const char *open = p->doc + nlen, *close = strstr(p->doc, ")\n--\n\n");
    if (strncmp(p->doc, p->fname, nlen) != 0 || *open != '(' || !close) return bad_declaration(p, "no name(...)\\n--");
    const char *s = open + 1;
    if (*s == '$') { /* $module or $self: CPython binds it, the caller never passes it */
        s = strpbrk(s, ",)");
        if (*s == ',') s++;
        while (*s == ' ') s++;
    }
    /* usage: the signature as Python shows it, without $module / $self */
    int w = snprintf(p->usage, sizeof p->usage, "%s(%.*s)%s", p->fname, (int)(close - s), s, p->hint ? p->hint : "");
    if (w < 0 || (size_t)w >= sizeof p->usage) return bad_declaration(p, "usage too long");
    int keyword_only = 0, defaults = 0;
    p->count = p->posonly = p->required = p->varargs = 0;
    p->positional = -1;
    while (s < close) {
        const char *end = memchr(s, ',', (size_t)(close - s));
        if (!end) end = close;
        const char *eq = memchr(s, '=', (size_t)(end - s));
        const char *name_end = eq ? eq : end;
        while (name_end > s && name_end[-1] == ' ') name_end--;
        size_t len = (size_t)(name_end - s);
        if (len == 1 && *s == '/') {
            if (keyword_only || p->posonly) return bad_declaration(p, "misplaced /");
            p->posonly = p->count;
        } else if (*s == '*') {
            if (keyword_only || (len > 1 && s[1] == '*')) return bad_declaration(p, "misplaced * or **");
            keyword_only = 1;
            p->varargs = len > 1;
            p->positional = p->count;
        } else {
            if (len == 0 || len >= GD_MAX_PARAM_NAME || p->count == GD_MAX_PARAMS)
                return bad_declaration(p, "empty or long name, or too many parameters");
            if (eq) defaults = 1;
            else if (defaults || keyword_only)
                return bad_declaration(p, "a parameter without default after defaults or keyword-only");
            else p->required++;
            memcpy(p->names[p->count], s, len);
            p->names[p->count++][len] = '\0';
        }
        s = end + (end < close);
        while (*s == ' ') s++;
    }
    if (p->positional < 0) p->positional = p->count;
    p->ready = 1;
    return 0;
}

int gd_usage_error(const gd_params *p)
{
    PyErr_SetString(PyExc_TypeError, p->usage);
    return -1;
}

/* The index of parameter `name` among those that may be passed by keyword, or -1. */
static int param_index(const gd_params *p, const char *name)
{
    for (int i = p->posonly; i < p->count; i++)
        if (strcmp(p->names[i], name) == 0) return i;
    return -1;
}

int gd_parse_args(PyObject **out, const gd_params *params, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    /* every gd_params is defined writable by GD_SIGNATURE; the const is for callers */
    gd_params *p = (gd_params *)params;
    if (!p->ready && read_signature(p) < 0) return -1;
    if (nargs > p->positional && !p->varargs) return gd_usage_error(p);
    unsigned given = 0; /* bit i: parameter i has an argument */
    for (Py_ssize_t i = 0; i < nargs && i < p->positional; i++) {
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
            /* PyTorch's dim= and keepdim= are gpudev's (NumPy's and the array API's) axis= and keepdims= */
            const char *hint = strcmp(name, "dim") == 0 && param_index(p, "axis") >= 0              ? "; use axis="
                               : strcmp(name, "keepdim") == 0 && param_index(p, "keepdims") >= 0 ? "; use keepdims="
                                                                                                  : "";
            if (shown)
                PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument %U%s", p->fname, shown, hint);
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
        if (!(given & (1u << i))) return gd_usage_error(p);
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
    /* a list is copied: it can change whenever Python code runs (args.h's rule) */
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
