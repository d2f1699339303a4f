/* compute.h - what compute.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_COMPUTE_H
#define GPUDEV_CORE_COMPUTE_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * compute.c: planning elementwise work and backend calls on whole arrays, shared by the
 * operations
 * ---------------------------------------------------------------------------------------- */

/* Describe out (`shape`, `size` >= 1 elements, strides `out_strides` in elements or NULL for
 * a new C-contiguous output) = f(operands). Each of the nops (<= 3) operands is an array
 * broadcastable to `shape` or NULL for a scalar whose opd[i].scalar the caller has set. Axes
 * are ordered by the output's strides and merge where every operand allows it. */
void gd_ewise_plan(gd_ewise *ew, gd_operand *opd, ArrayObject *const *arrs, int nops, int ndim,
                   const int64_t *shape, int64_t size, const int64_t *out_strides);
/* One contiguous run of n elements. */
void gd_contiguous_plan(gd_ewise *ew, int64_t n);

/* out = op(a) for the plan ew: one backend call. -1 with an exception. */
int gd_run_ewise_unary(gd_state *st, const gd_backend *be, gd_device dev, void *out, gd_unop op, gd_dtype dt,
                       const gd_ewise *ew, const gd_operand *a, const char *name);
/* out = op(in) over n contiguous elements of dt; out may be in. -1 with an exception. */
int gd_run_unary(gd_state *st, const gd_backend *be, gd_device dev, void *out, gd_unop op, gd_dtype dt,
                 const void *in, int64_t n, const char *name);
/* dst[...] = value, for any strides of dst. */
int gd_fill(gd_state *st, const gd_backend *be, ArrayObject *dst, gd_scalar value, const char *name);
/* out[0:n] = value. */
int gd_run_fill(gd_state *st, const gd_backend *be, gd_device dev, void *out, gd_dtype dt, gd_scalar value,
                int64_t n, const char *name);
/* out (n elements of odt) = in (n elements of idt), converted as C casts do (a copy when the
 * dtypes match); both contiguous. */
int gd_run_astype(gd_state *st, const gd_backend *be, gd_device dev, void *out, gd_dtype odt, const void *in,
                  gd_dtype idt, int64_t n, const char *name);
/* A new C-contiguous array holding a converted to dt (same device and shape); a plain copy
 * when a already has dt. */
ArrayObject *gd_converted(gd_state *st, const gd_backend *be, ArrayObject *a, gd_dtype dt, const char *name);
/* a itself (a new reference) when it is C-contiguous, else a C-contiguous copy. */
ArrayObject *gd_contiguous(gd_state *st, const gd_backend *be, ArrayObject *a, const char *name);
/* A new array holding a broadcast to (ndim, shape). */
ArrayObject *gd_expanded(gd_state *st, const gd_backend *be, ArrayObject *a, int ndim, const int64_t *shape,
                         const char *name);
/* dst[...] = src elementwise for src of dst's shape (or broadcastable to it), any strides and
 * dtypes on one device (converted as C casts do); src must not overlap dst other than
 * exactly. -1 with an exception. */
int gd_store(gd_state *st, const gd_backend *be, ArrayObject *dst, ArrayObject *src, const char *name);
/* Whether two arrays on one device may share a byte (their address ranges overlap). */
int gd_overlaps(const ArrayObject *x, const ArrayObject *y);
/* Whether x and y are the same elements: same data, dtype, shape and strides. */
int gd_same_layout(const ArrayObject *x, const ArrayObject *y);
/* Whether a non-empty array's elements fill one block of memory without gaps or repeats, in
 * any order (a.T, a[::-1]); gd_extent gives the block. */
int gd_is_dense(const ArrayObject *a);
/* The lowest and one past the highest byte address a non-empty array touches. */
void gd_extent(const ArrayObject *a, uintptr_t *lo, uintptr_t *hi);

#endif /* GPUDEV_CORE_COMPUTE_H */
