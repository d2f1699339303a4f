/* array.h - what array.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_ARRAY_H
#define GPUDEV_CORE_ARRAY_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * array.c: Array objects: allocation, views, deallocation
 * ---------------------------------------------------------------------------------------- */

/* The type's dealloc and tp_new slots (array_type.c puts them in the type). */
void gd_array_dealloc(PyObject *self);
PyObject *gd_array_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwds);
static inline int gd_is_array(gd_state *st, PyObject *o) { return Py_TYPE(o) == st->array_type; }
/* Whether o is a gpudev Array of any instance of the module (the number slots meet Arrays and
 * foreign objects in either position, before they know which module's state to use). */
static inline int gd_is_any_array(PyObject *o) { return Py_TYPE(o)->tp_dealloc == gd_array_dealloc; }

/* o itself when it is an Array, else NULL with TypeError ("convert it with gd.asarray(x)"). */
ArrayObject *gd_need_array(gd_state *st, PyObject *o, const char *op);
/* Adds the methods of `defs` (ending in a NULL name) to the Array type: the files of the
 * operations register their own methods this way. 0 or -1. */
int gd_array_add_methods(gd_state *st, PyMethodDef *defs);
static inline size_t gd_array_nbytes(const ArrayObject *a) { return (size_t)a->size * gd_dtype_size(a->dtype); }

/* A new owning C-contiguous array with uninitialised contents; NULL with an exception set
 * (shape errors, OutOfMemoryError, DeviceUnavailableError). `op` names the operation. */
ArrayObject *gd_array_new(gd_state *st, gd_device dev, gd_dtype dtype, int ndim, const int64_t *shape,
                          const char *op);
/* The same on the CPU in page-locked memory from the CUDA backend (GPU `gpu` checks that it
 * is there), which copies to and from GPUs return at once; the array's is_pinned(). */
ArrayObject *gd_array_new_pinned(gd_state *st, int gpu, gd_dtype dtype, int ndim, const int64_t *shape,
                                 const char *op);
/* A view of `src`'s storage whose element 0 is at `data`, with a new shape and strides
 * (elements; NULL: C-contiguous), same dtype and device. */
ArrayObject *gd_array_view(gd_state *st, ArrayObject *src, char *data, int ndim, const int64_t *shape,
                           const int64_t *strides);
/* Moves the memory of `a`, a fresh result that allocated it, into a new root Array (same
 * data, shape and strides) and makes `a` an alias of that root: writes into `a` then count on
 * the root, which holds no reference to `a`. Autograd keeps the root for a rule that reads the
 * result (sigmoid), with no reference cycle through `a`'s node. Returns a new reference to
 * the root, or Py_None where the memory stays: inline data (the array is tiny), a view,
 * borrowed, pinned or exported memory. */
PyObject *gd_array_split_storage(gd_state *st, ArrayObject *a);
/* An Array of `dtype`, `shape` and `strides` (elements; NULL: C-contiguous) on `dev` sharing the
 * memory of `owner` at `data` (a NumPy array, a DLPack import), which it keeps alive. Steals
 * the reference to owner. */
ArrayObject *gd_array_borrow(gd_state *st, PyObject *owner, char *data, gd_device dev, gd_dtype dtype, int ndim,
                             const int64_t *shape, const int64_t *strides, int64_t size);
/* C-contiguous strides (elements) of a shape. Axes of length 0 count as 1, as in NumPy; for
 * an empty array with huge other axes the product stops growing where it would overflow (such
 * strides are never used to address memory). */
void gd_c_strides(int64_t *strides, int ndim, const int64_t *shape);
/* NumPy's C-contiguity: strides match gd_c_strides on every axis longer than 1, or the array
 * is empty. */
int gd_is_c_contiguous(int ndim, const int64_t *shape, const int64_t *strides);

/* The array that owns a's storage (a itself unless a is a view of another Array): writes in
 * place count on it, so every view of one storage shares the count. */
static inline ArrayObject *gd_owner(gd_state *st, ArrayObject *a)
{
    return a->base && gd_is_array(st, a->base) ? (ArrayObject *)a->base : a;
}
static inline void gd_bump_version(gd_state *st, ArrayObject *a) { gd_owner(st, a)->version++; }

#endif /* GPUDEV_CORE_ARRAY_H */
