/* matmul.h - what matmul.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_MATMUL_H
#define GPUDEV_CORE_MATMUL_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * matmul.c: matrix products
 * ---------------------------------------------------------------------------------------- */

int gd_matmul_setup(PyObject *module);
/* NumPy's matmul: 1-D and 2-D cases and batched N-D with broadcast batch dims. */
PyObject *gd_matmul(gd_state *st, PyObject *a, PyObject *b);

#endif /* GPUDEV_CORE_MATMUL_H */
