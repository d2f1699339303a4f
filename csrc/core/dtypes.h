/* dtypes.h - what dtypes.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_DTYPES_H
#define GPUDEV_CORE_DTYPES_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * dtypes.c: gpudev's dtypes as NumPy sees them
 * ---------------------------------------------------------------------------------------- */

/* Fill NumPy's C-API table, which every file of the core uses (before anything else at
 * exec). -1 with an exception. */
int gd_import_numpy(void);
/* np_dtypes in the state, and gd.float32, gd.float64, gd.int64, ... (NumPy's scalar types). */
int gd_dtypes_setup(PyObject *module, gd_state *st);

/* Parse a dtype argument: gd/NumPy dtype objects, numpy scalar types, 'float32' strings...
 * None -> *out unchanged. -1 with TypeError on anything else. */
int gd_parse_dtype(PyObject *obj, gd_dtype *out, const char *op);
/* The gpudev dtype that holds data of NumPy dtype `descr` (kept, or widened: float16 becomes
 * float32, (u)int8/16 and uint32 int64), or -1 when there is none. */
int gd_dtype_from_numpy(PyArray_Descr *descr);
/* Whether descr is exactly gpudev dtype dt (same NumPy type number). */
int gd_numpy_is(gd_state *st, PyArray_Descr *descr, gd_dtype dt);

#endif /* GPUDEV_CORE_DTYPES_H */
