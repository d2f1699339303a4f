/* window.h - what window.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_WINDOW_H
#define GPUDEV_CORE_WINDOW_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * window.c: convolution's im2col and col2im, pooling (private functions of gpudev._C)
 * ---------------------------------------------------------------------------------------- */

int gd_window_setup(PyObject *module);

#endif /* GPUDEV_CORE_WINDOW_H */
