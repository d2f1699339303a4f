/* args.h - what args.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_ARGS_H
#define GPUDEV_CORE_ARGS_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * args.c: arguments of METH_FASTCALL | METH_KEYWORDS functions
 *
 * The rule for arguments that hold other objects (a shape, a list of arrays, axes, an index,
 * a list of devices): own what you read before Python code runs or the GIL is released.
 * Python code runs inside __index__, __float__, __bool__, __array__, __dlpack__, repr, a
 * trace hook, any method of an argument; other threads run while the GIL is released
 * (gd_run_begin for large CPU work, gd_wait, copies to the host). Either may change a list or
 * drop the last reference to one of its items, and a C pointer into it then dangles. So:
 *   - read a sequence through gd_tuple_of (a tuple that holds every item), never through
 *     PySequence_Fast alone: for a list it returns the list itself, not a copy;
 *   - keep a strong reference to any object used after a callback or with the GIL released;
 *   - the FASTCALL args array and kwnames stay alive for the whole call, the containers they
 *     reach do not.
 * Each entry point that takes a sequence has a test with a mutating __index__ or another
 * thread mutating it (tests/test_callbacks.py).
 * ---------------------------------------------------------------------------------------- */

/* ------------------------------------------------------------------------------------------
 * Signatures, declared once. A function's parameters are written in one place: the text
 * signature at the head of its docstring, in CPython's Argument Clinic form
 *     "zeros($module, shape, *dims, dtype=None, device=None, requires_grad=False)\n--\n\n..."
 * ($module or $self first, `/` ends positional-only parameters, `*` or `*name` starts the
 * keyword-only ones). inspect.signature and editors read it from __text_signature__;
 * gd_parse_args reads the same text, on a function's first call, for the parameter names, how
 * many may be positional, how many are required and the usage of its TypeErrors; and
 * tools/make_stubs.py writes gpudev/_C.pyi from it. So names, kinds and defaults cannot
 * disagree between the three. Defaults are Python literals (None, True, False, numbers).
 *
 *   GD_SIGNATURE(zeros_sig, "zeros", "$module, shape, *dims, ...", "doc")   a parsed function:
 *       defines zeros_sig (its gd_params, for gd_parse_args) and its name and docstring;
 *   GD_DEF(zeros_sig, GD_FN(mod_zeros), GD_FASTKW)                          its PyMethodDef;
 *   GD_METHOD("exp", mod_exp, METH_O, "$module, a, /", "doc")               a PyMethodDef whose
 *       arguments CPython or the function checks (METH_O, METH_NOARGS, positional FASTCALL).
 * GD_SIGNATURE_USAGE adds a hint to the usage message; GD_SIGNATURE_SHARED is GD_SIGNATURE
 * for a method whose PyMethodDef lives in another file (its header declares it with
 * GD_SIGNATURE_EXTERN). tests/test_signatures.py checks every public callable against what
 * its parser accepts.
 * ---------------------------------------------------------------------------------------- */

#define GD_MAX_PARAMS 6
#define GD_MAX_PARAM_NAME 24
#define GD_MAX_USAGE 320

/* The parameters of one function, for gd_parse_args. Only fname, doc and hint are written
 * (by the macros below); the rest is read from doc's signature on first use, so a gd_params
 * is never const. */
typedef struct gd_params {
    const char *fname; /* the function as messages name it: "zeros" */
    const char *doc;   /* its docstring, which starts with the signature */
    const char *hint;  /* appended to the usage message, or NULL */
    int ready;         /* the fields below are filled */
    int positional;    /* how many may be passed by position (the rest are keyword-only) */
    int posonly;       /* how many of those may not be passed by keyword */
    int required;      /* how many leading parameters must be given */
    int varargs;       /* `*name`: positional arguments past `positional` are the caller's */
    int count;         /* named parameters, in order, in names */
    char names[GD_MAX_PARAMS][GD_MAX_PARAM_NAME];
    char usage[GD_MAX_USAGE]; /* "zeros(shape, *dims, dtype=None, ...)" and the hint */
} gd_params;

#define GD_DOC(name, sig, doc) name "(" sig ")\n--\n\n" doc
#define GD_METHOD(name, fn, flags, sig, doc) {name, fn, flags, GD_DOC(name, sig, doc)}
#define GD_SIGNATURE_IN(storage, id, name, sig, hint, doc) \
    storage const char id##_name[] = name;                 \
    storage const char id##_doc[] = GD_DOC(name, sig, doc); \
    storage gd_params id = {id##_name, id##_doc, hint, 0, 0, 0, 0, 0, 0, {{0}}, {0}}
/* An Array method whose table is in array_type.c. Its private twin, "_" name, serves a method
 * that gpudev/_array.py defines in Python and that calls the C one: the table lists that entry
 * with GD_DEF_PRIVATE, so no Python method replaces a C one, and messages still say name. */
#define GD_SIGNATURE_SHARED(id, name, sig, doc)                         \
    const char id##_private_name[] = "_" name;                          \
    const char id##_private_doc[] = GD_DOC("_" name, sig, doc);         \
    GD_SIGNATURE_IN(, id, name, sig, NULL, doc)
#define GD_SIGNATURE_USAGE(id, name, sig, hint, doc) GD_SIGNATURE_IN(static, id, name, sig, hint, doc)
#define GD_SIGNATURE(id, name, sig, doc) GD_SIGNATURE_IN(static, id, name, sig, NULL, doc)
#define GD_SIGNATURE_EXTERN(id) \
    extern const char id##_name[], id##_doc[], id##_private_name[], id##_private_doc[]; extern gd_params id
#define GD_DEF(id, fn, flags) {id##_name, fn, flags, id##_doc}
#define GD_DEF_PRIVATE(id, fn, flags) {id##_private_name, fn, flags, id##_private_doc}

/* Match a FASTCALL call's arguments to p's parameters: out[i] receives the argument given for
 * p->names[i] and keeps what the caller stored there (its default) when none was given. 0, or
 * -1 with TypeError: p->usage for too many positional arguments or a missing required one,
 * "f() got an unexpected keyword argument 'k'", "f() got multiple values for argument 'k'".
 * With `*name` declared, positional arguments past p->positional are left to the caller.
 * (p is const for its callers; its derived fields are filled on the first call.) */
int gd_parse_args(PyObject **out, const gd_params *p, PyObject *const *args, Py_ssize_t nargs,
                  PyObject *kwnames);

/* TypeError with p's usage message; -1. */
int gd_usage_error(const gd_params *p);

/* obj's truth value into *out, leaving *out alone for NULL or None. -1 on error. */
int gd_parse_bool(PyObject *obj, int *out);

/* A tuple holding the items of any sequence or iterable `seq` (seq itself, with a new
 * reference, when it is a tuple), so that Python code run later cannot change what the caller
 * reads; NULL with TypeError `msg` when seq is not iterable. */
PyObject *gd_tuple_of(PyObject *seq, const char *msg);

/* repr(obj) for an error message (a new reference): cut to about GD_BRIEF_REPR characters,
 * and "<list object>" when repr itself fails (a list nested past the recursion limit), so a
 * hostile argument gets the message meant for it, of a readable length. */
#define GD_BRIEF_REPR 200
PyObject *gd_brief_repr(PyObject *obj);

#endif /* GPUDEV_CORE_ARGS_H */
