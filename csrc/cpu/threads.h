/* threads.h - how the CPU backend spreads work over threads: the thread count, how many
 * threads a piece of work is worth, the parallel loops every kernel uses, and the section in
 * which OpenBLAS must stay single-threaded. Plain C11; no Python.
 *
 * The count itself is set and read through gd_cpu_set_num_threads / gd_cpu_get_num_threads
 * (backend_cpu.h), which also set OpenBLAS's.
 */
#ifndef GPUDEV_CPU_THREADS_H
#define GPUDEV_CPU_THREADS_H

#include <stdint.h>

/* Threads worth using for `work` items when a thread should get at least min_work / 2:
 * 1 below min_work, in a child process after fork(), or when the count is 1. */
int gd_threads_for(int64_t work, int64_t min_work);

/* A piece of a parallel loop: items [begin, end) of the loop described by ctx. */
typedef void (*gd_range_fn)(void *ctx, int64_t begin, int64_t end);

/* fn(ctx, begin, end) over [0, n) on nt threads. Each thread owns one contiguous part of the
 * range (edges on multiples of `align` items) and works through it in pieces; a thread that
 * finishes early takes the remaining pieces of the others. The calling thread takes part. */
void gd_parallel_for(int nt, int64_t n, int64_t align, gd_range_fn fn, void *ctx);

/* The same for independent items whose data is new each call (whole matrix products):
 * handed out `grain` at a time to whichever thread is free. */
void gd_parallel_for_dynamic(int nt, int64_t n, int64_t grain, gd_range_fn fn, void *ctx);

/* OpenBLAS single-threaded between begin and end, for products run on gpudev's own threads
 * (a multi-threaded OpenBLAS called from an OpenMP thread can deadlock). Nested and
 * concurrent sections share one count; a thread count set meanwhile applies at the end. */
void gd_blas_single_begin(void);
void gd_blas_single_end(void);

#endif /* GPUDEV_CPU_THREADS_H */
