/* shape.h - what shape.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_SHAPE_H
#define GPUDEV_CORE_SHAPE_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * shape.c: shapes, broadcasting and axes
 * ---------------------------------------------------------------------------------------- */

/* Parse a shape given as a tuple/list of ints or as ints (`rand(2, 3)`). */
int gd_parse_shape(PyObject *const *args, Py_ssize_t nargs, int *ndim, int64_t *shape, const char *op);
/* The shape as a Python tuple of ints (new reference). */
PyObject *gd_shape_tuple(int ndim, const int64_t *shape);
/* "(2, 3)" into buf (at least 256 bytes); returns buf. */
const char *gd_shape_str(int ndim, const int64_t *shape, char *buf);
/* The number of elements of a shape; -1 with ValueError when it overflows int64. */
int gd_shape_size(int64_t *out, int ndim, const int64_t *shape, const char *op);
/* NumPy's broadcast of two shapes (right-aligned; a 1 stretches). -1 when they do not
 * broadcast; no exception set, each caller words its own (gd_raise_broadcast). */
int gd_broadcast(int *ndim, int64_t *shape, int na, const int64_t *sa, int nb, const int64_t *sb);
void gd_raise_broadcast(const char *op, int na, const int64_t *sa, int nb, const int64_t *sb);
/* Normalise one axis (negative counts from the end) against ndim; numpy's AxisError if out
 * of range. */
int gd_normalize_axis(int *out, int64_t axis, int ndim, const char *op);
/* One axis argument: an int (or an object with __index__) without the normalising, clipped to
 * int64 so that a huge value is out of range rather than truncated. -1 with TypeError. */
int gd_parse_axis(int64_t *out, PyObject *obj, const char *op);
/* Mark the reduced axes of an ndim-array; axis is None, an int or a tuple of ints. */
int gd_parse_axes(uint8_t *reduced, PyObject *axis, int ndim, const char *op);

static inline int gd_same_shape(const ArrayObject *x, const ArrayObject *y)
{
    return x->ndim == y->ndim && memcmp(x->shape, y->shape, (size_t)x->ndim * sizeof(int64_t)) == 0;
}

#endif /* GPUDEV_CORE_SHAPE_H */
