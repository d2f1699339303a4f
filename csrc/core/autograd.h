/* autograd.h - what autograd.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_AUTOGRAD_H
#define GPUDEV_CORE_AUTOGRAD_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * autograd.c: recording operations for backward() (the tape is gpudev/autograd.py)
 * ---------------------------------------------------------------------------------------- */

/* The Array attributes requires_grad, grad, grad_fn, is_leaf and methods requires_grad_,
 * detach, backward; grad mode; the recorder's registration. */
int gd_autograd_setup(PyObject *module, gd_state *st);

/* Grad mode of the calling thread, as in PyTorch: nonzero inside no_grad (only read once an
 * input is part of a graph). */
extern _Thread_local int gd_ag_off;

/* Whether o (an operand: Array, scalar or NULL) is part of a graph. */
static inline int gd_ag_has(gd_state *st, PyObject *o)
{
    return o && Py_TYPE(o) == st->array_type && ((ArrayObject *)o)->ag;
}
/* Whether an operation on a and b (b may be NULL) must be recorded. */
static inline int gd_ag_wanted(gd_state *st, PyObject *a, PyObject *b)
{
    return GD_UNLIKELY(gd_ag_has(st, a) || gd_ag_has(st, b)) && !gd_ag_off;
}
/* Whether any Array of a PySequence_Fast sequence is part of a graph, with grad mode on. */
int gd_ag_any(gd_state *st, PyObject *seq);

/* Record out = op(a, b) (b may be NULL; a may be a tuple of inputs) with `extra` (a new
 * reference or NULL, e.g. the axis of a reduction; NULL with an exception set is an error):
 * out's producer becomes the recorder's node. Steals out; returns it, or NULL with an
 * exception (the recorder names ops it cannot differentiate). */
PyObject *gd_ag_record(gd_state *st, const char *op, PyObject *out, PyObject *a, PyObject *b, PyObject *extra);
/* What every recorded operation returns: out, recorded when an input is part of a graph.
 * out, a and b are evaluated more than once: pass variables; extra only when recording. */
#define GD_AG_OUT(st, op, out, a, b, extra)                                                              \
    ((out) && gd_ag_wanted((st), (PyObject *)(a), (PyObject *)(b))                                       \
         ? gd_ag_record((st), (op), (PyObject *)(out), (PyObject *)(a), (PyObject *)(b), (extra))       \
         : (PyObject *)(out))
/* out with requires_grad set from a creation function's requires_grad= argument (NULL: not
 * given); steals out, NULL with an exception for integer dtypes. */
PyObject *gd_ag_created(PyObject *out, PyObject *requires_grad);
/* a op= b when a or b is part of a graph: the recorder checks, computes and records it. */
PyObject *gd_ag_inplace(gd_state *st, const char *op, PyObject *a, PyObject *b);
/* a[key] = value when a or value is part of a graph. -1 with an exception. */
int gd_ag_setitem(gd_state *st, PyObject *a, PyObject *key, PyObject *value);

#endif /* GPUDEV_CORE_AUTOGRAD_H */
