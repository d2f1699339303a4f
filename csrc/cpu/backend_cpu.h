/* backend_cpu.h - the CPU backend: its vtable and the host-only controls the core exposes
 * (threads, SIMD level, BLAS build, memory counters). Plain C11; no Python.
 */
#ifndef GPUDEV_BACKEND_CPU_H
#define GPUDEV_BACKEND_CPU_H

#include <stdint.h>

#include "gpudev.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The host as a gpudev device: one device (index 0), synchronous, every operation entry
 * filled; of the device services, memory_stats and reset_peak_memory. */
extern const gd_backend gd_cpu_backend;

/* Threads used by gpudev's own parallel loops and by OpenBLAS. n < 1 means 1. The default
 * is the number of cores this process may run on (its affinity mask). Thread-safe. */
void gd_cpu_set_num_threads(int n);
int gd_cpu_get_num_threads(void);

/* Elements from which an elementwise operation (add, multiply, ...) is split over a second
 * thread (GD_PAR_ELEMENTWISE in threads.h): the exercises mark this size in their sweeps, so
 * a jump in speed there is credited to the threads, not to a cache. */
int64_t gd_cpu_elementwise_parallel_from(void);

/* The widest vector unit the hot loops use on this machine, detected at run time:
 * "avx512f", "avx2", "neon" or "baseline". */
const char *gd_cpu_simd_level(void);

/* OpenBLAS's build description, e.g. "OpenBLAS 0.3.34 DYNAMIC_ARCH NO_AFFINITY SkylakeX
 * MAX_THREADS=64". Static storage; never NULL. */
const char *gd_cpu_blas_config(void);

/* The kernel set OpenBLAS runs on this machine, e.g. "SkylakeX" or "Haswell": its own pick
 * from the CPU, unless the environment forces one (OPENBLAS_CORETYPE), which a forced older
 * set can make products run at half speed. Static storage; never NULL. */
const char *gd_cpu_blas_core(void);

/* How many threads' products find OpenBLAS's float32 packing buffers primed (0 until the
 * first float32 product; gemm.c says why they are primed), and in *late the tries that ran
 * late on a busy machine and did not count (after 3 of them no more are made). For tests
 * and diagnostics. */
int gd_cpu_blas_primed_threads(int *late);

#ifdef __cplusplus
}
#endif

#endif /* GPUDEV_BACKEND_CPU_H */
