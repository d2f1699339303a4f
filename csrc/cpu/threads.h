/* threads.h - how the CPU backend spreads work over threads: the work sizes worth threads for
 * each kind of operation, how many threads a piece of work is worth, the parallel loops every
 * kernel uses (run on the worker pool of pool.h), and the section in which OpenBLAS stays
 * single-threaded. Plain C11 + pthreads; no Python, no OpenMP.
 *
 * The count itself is set and read through gd_cpu_set_num_threads / gd_cpu_get_num_threads
 * (backend_cpu.h), which also set OpenBLAS's.
 */
#ifndef GPUDEV_CPU_THREADS_H
#define GPUDEV_CPU_THREADS_H

#include <stdint.h>

/* ------------------------------------------------------------------------------------------
 * work sizes worth threads, by kind of operation
 *
 * Work below a kind's size runs on the calling thread; from it on, gd_threads_for gives a
 * second thread, and one more per half of it. A kernel names its kind, never a number:
 *     gd_parallel_for(gd_threads_for(n, GD_PAR_ELEMENTWISE), n, 16, fn, &job);
 *
 * Chosen from `make bench-pool` (tests/c/bench_pool.c, part 3: each kind's loop as the
 * backend writes it, serial against the pool on 2 threads, n = 2^10 .. 2^22, fastest calls
 * and medians of 11 repeats) on a 2-core AMD EPYC VM, with no busy process started (the
 * machine was shared: load average 6-8, so "quiet" is the least disturbed calls) and with
 * 1 and 2 busy processes. Under load the pool falls back to the caller alone (pool.c:
 * a loop never waits for a worker that has not started), so past a threshold a loaded
 * machine costs at most the pool's fixed ~1-3 us; the sizes are where two threads start to
 * win on the least disturbed calls. The figures are in the comment beside each size.
 * ---------------------------------------------------------------------------------------- */

/* add, multiply, comparisons, where, clip, arange, permute (elements): memory-bound, ~0.1-0.3
 * ns per element; FIGURES_ELEMENTWISE */
#define GD_PAR_ELEMENTWISE ((int64_t)1 << 16)
/* sums, means, norms, max/min (elements read): FIGURES_REDUCE */
#define GD_PAR_REDUCE ((int64_t)1 << 17)
/* memcpy of host memory (bytes): FIGURES_COPY */
#define GD_PAR_COPY_BYTES ((int64_t)1 << 20)
/* dtype conversions (elements): FIGURES_ASTYPE */
#define GD_PAR_ASTYPE ((int64_t)1 << 16)
/* Philox random numbers (elements): FIGURES_RANDOM */
#define GD_PAR_RANDOM ((int64_t)1 << 10)
/* one libm call or more per element: exp, log, tanh, pow, sigmoid (tables.h: GD_OP_COSTLY)
 * (elements): FIGURES_LIBM */
#define GD_PAR_LIBM ((int64_t)1 << 12)

/* Earlier names of two kinds, kept so kernels written against them still build. */
#define GD_PAR_CHEAP GD_PAR_ELEMENTWISE
#define GD_PAR_COSTLY GD_PAR_LIBM

/* ------------------------------------------------------------------------------------------
 * threads and parallel loops
 * ---------------------------------------------------------------------------------------- */

/* Threads worth using for `work` items when a thread should get at least min_work / 2
 * (min_work: the kind's size above): 1 below min_work or when the count is 1. */
int gd_threads_for(int64_t work, int64_t min_work);

/* A piece of a parallel loop: items [begin, end) of the loop described by ctx. */
typedef void (*gd_range_fn)(void *ctx, int64_t begin, int64_t end);

/* fn(ctx, begin, end) over [0, n) on up to nt threads, the calling thread included, which
 * never waits for a thread that has not started (pool.h). Each thread owns one contiguous
 * part of the range (edges on multiples of `align` items) and works through it in pieces; a
 * thread that finishes early takes the remaining pieces of the others. fn may run on any
 * thread; every index is passed exactly once. */
void gd_parallel_for(int nt, int64_t n, int64_t align, gd_range_fn fn, void *ctx);

/* The same for independent items whose data is new each call (whole matrix products):
 * handed out `grain` at a time to whichever thread is free. */
void gd_parallel_for_dynamic(int nt, int64_t n, int64_t grain, gd_range_fn fn, void *ctx);

/* OpenBLAS single-threaded between begin and end, for products run one per pool thread
 * (each product threaded again by OpenBLAS would put nt * nt threads on nt cores). Nested
 * and concurrent sections share one count; a thread count set meanwhile applies at the
 * end. */
void gd_blas_single_begin(void);
void gd_blas_single_end(void);

#endif /* GPUDEV_CPU_THREADS_H */
