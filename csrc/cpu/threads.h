/* threads.h - how the CPU backend spreads work over threads: the work sizes worth threads for
 * each kind of operation, how many threads a piece of work is worth, the parallel loops every
 * kernel uses (run on the worker pool of pool.h), and OpenBLAS held at one thread. Plain
 * C11 + pthreads; no Python, no OpenMP.
 *
 * The count itself is set and read through gd_cpu_set_num_threads / gd_cpu_get_num_threads
 * (backend_cpu.h); it governs matrix products too, which gpudev splits itself.
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
 * backend writes it, serial against the pool on 2 threads, n = 2^10 .. 2^22, 11 repeats) on
 * a 2-core AMD EPYC VM: with no busy process started, then 2 and 1 busy processes. Each
 * size is where two threads start to win on the least disturbed calls with no busy process
 * and, in medians, win or break even with 2. With 1 busy process (one core left for two threads) the
 * ratios scatter from 0.6 to 1.6 with no trend for the memory-bound kinds: there the pool
 * mostly falls back to the caller alone (pool.c: a loop never waits for a worker that has
 * not started), so a threshold neither gains nor costs much.
 *
 * The figures: serial time / pool time at n elements, "fastest call | median" (above 1: the
 * pool is faster), from one run. The machine was shared with other builds: load average
 * 5-7 with no busy process started and 5-10 with them, so "quiet" is the least disturbed
 * calls, and a median moves by 0.3-0.5 between neighbouring sizes (noise, not a trend).
 * ---------------------------------------------------------------------------------------- */

/* add, multiply, comparisons, where, clip, arange, permute (elements): memory-bound, ~0.17 ns
 * per element (2^18: 46 us serial). Two threads win from 2^15 on the least disturbed calls,
 * but with 2 busy processes their medians lose up to 2^17 (400x400 `b += b; b *= .5` took
 * 1.6x NumPy's time in two runs with 2^16 as the size), so the size is 2^18.
 *           2^16         2^17         2^18
 *   quiet   1.79 | 1.42  1.81 | 1.01  1.94 | 1.00
 *   2 busy  1.68 | 0.70  1.48 | 0.82  1.82 | 1.40
 *   1 busy  0.88 | 1.00  0.96 | 0.93  0.98 | 1.18 */
#define GD_PAR_ELEMENTWISE ((int64_t)1 << 18)
/* axpby, an optimizer's fused update y = beta * y + alpha * x (elements): ~0.08 ns per element
 * in cache (2^16: 5 us serial), a quarter of the elementwise size. Its arrays are a model's
 * parameters and their gradients, which a product split over both cores has just written,
 * half on each: an SGD step of the d2l MLP (784-256-10, batch 256, 2 threads; its four
 * parameters) took 76-80 us with the 784x256 weight's update on the caller alone, 50 us with
 * it on both. With 1 busy process the pool mostly runs the caller alone (0.89-0.97, as for
 * the kinds above). `make bench-pool` (part 3, on a 2-core Intel Xeon VM, load average below
 * 1 with no busy process started):
 *           2^15         2^16         2^17
 *   quiet   1.38 | 1.12  1.68 | 1.55  1.72 | 1.67
 *   2 busy  1.38 | 1.07  1.67 | 2.06  1.81 | 2.01
 *   1 busy  1.37 | 0.97  1.62 | 0.89  1.73 | 0.97 */
#define GD_PAR_UPDATE ((int64_t)1 << 16)
/* pooling and its adjoint (elements read and written): ~0.9 ns per element, five times an
 * add's (a window's reads and its divisor), so the elementwise size held d2l LeNet's second
 * pooling (128x16x10x10 in, 256,000 elements) to one thread: 0.24 ms forward and 0.29 ms
 * backward on 1 thread and on 2, where its first (752,640) took 0.36 -> 0.20 and
 * 0.54 -> 0.23 ms. 2^16 elements are ~60 us serial, about the elementwise size's time. */
#define GD_PAR_POOL ((int64_t)1 << 16)
/* sums, means, norms, max/min (elements read): ~0.08 ns per element (2^17: 11 us serial).
 *           2^15         2^16         2^17
 *   quiet   1.72 | 1.41  1.77 | 1.18  1.80 | 1.30
 *   2 busy  0.98 | 0.89  1.59 | 1.17  1.68 | 1.05
 *   1 busy  1.70 | 0.99  0.98 | 1.08  1.35 | 1.58 */
#define GD_PAR_REDUCE ((int64_t)1 << 17)
/* memcpy of host memory (bytes; the figures are per float32, 4 bytes): 2^20 bytes, 13 us.
 *           2^17 floats  2^18 floats  2^20 floats
 *   quiet   1.84 | 1.16  1.71 | 1.12  1.98 | 1.28
 *   2 busy  0.94 | 0.99  1.59 | 1.17  1.66 | 1.11
 *   1 busy  1.40 | 1.21  0.88 | 1.45  0.96 | 0.99 */
#define GD_PAR_COPY_BYTES ((int64_t)1 << 20)
/* dtype conversions (elements): float32 to float64, ~0.16 ns per element (2^16: 10 us).
 *           2^15         2^16         2^18
 *   quiet   1.36 | 0.76  1.82 | 0.94  1.63 | 1.37
 *   2 busy  0.94 | 1.98  0.97 | 1.35  0.98 | 1.01
 *   1 busy  0.91 | 0.94  1.02 | 0.63  1.30 | 0.90 */
#define GD_PAR_ASTYPE ((int64_t)1 << 16)
/* Philox random numbers (elements): normal float32, ~15 ns per element (2^10: 15 us).
 *           2^10         2^12         2^14
 *   quiet   1.47 | 1.55  1.94 | 1.27  1.79 | 1.65
 *   2 busy  1.10 | 1.29  1.00 | 2.41  1.02 | 1.16
 *   1 busy  1.57 | 1.06  1.59 | 1.40  1.47 | 1.14 */
#define GD_PAR_RANDOM ((int64_t)1 << 10)
/* one libm call or more per element: exp, log, tanh, pow, sigmoid (tables.h: GD_OP_COSTLY)
 * (elements): exp of float32, ~3.7 ns per element (2^12: 15 us).
 *           2^11         2^12         2^14
 *   quiet   1.52 | 0.91  1.56 | 1.42  1.96 | 1.11
 *   2 busy  1.72 | 0.88  1.85 | 1.28  1.96 | 1.30
 *   1 busy  0.97 | 0.94  0.99 | 0.83  1.96 | 1.21 */
#define GD_PAR_LIBM ((int64_t)1 << 12)

/* matrix products (multiply-adds m*n*k): OpenBLAS always runs single-threaded, and gpudev
 * splits a product into panels of its result, each one single-threaded OpenBLAS call on the
 * pool (gemm.c), or a batch into whole products. Below this size a product runs whole on the
 * calling thread. The smallest split products measured, 6.6e5 multiply-adds (~20 us on one
 * thread), take 0.52-0.59 of the time; 2^17 (~4 us) is five times below them (smaller
 * products were not measured; a 2-thread loop's own cost is ~0.4 us, bench_pool).
 * The figures: gpudev on 2 threads / one single-threaded OpenBLAS call (NumPy's, threads set
 * to 1 with threadpoolctl), median of 5 alternating blocks, on a 2-core AMD EPYC VM with
 * nothing else running (load average below 1), then with 1 and 2 busy processes
 * (gpudev.bench.load), with the pool's spins of pool.c; the d2l layers' products
 * (784-256-10, batch 256) forward and backward, and a few more:
 *                  multiply-adds  quiet   1 busy  2 busy
 *   256x784 @ 784x10   2.0e6      0.50    0.51    0.98
 *   10x256 @ 256x784   2.0e6      0.57    1.00    0.95
 *   784x256 @ 256x10   2.0e6      0.55    1.00    0.92
 *   256x10 @ 10x784    2.0e6      0.68    1.18    1.14
 *   256x256 @ 256x10   6.6e5      0.59    1.00    0.91
 *   10x256 @ 256x256   6.6e5      0.52    0.97    0.54
 *   256x10 @ 10x256    6.6e5      0.56    0.96    0.95
 *   512x784 @ 784x10   4.0e6      0.55    1.00    0.95
 *   1000x100 @ 100x50  5.0e6      0.55    1.01    1.00
 *   256x784 @ 784x256  5.1e7      0.52    0.99    0.50
 * With the earlier size, 2^21 (chosen on a machine that other builds kept at load average
 * 7-9, where a second thread's win could not be seen), every product of the d2l layers but
 * the largest ran on one thread: 0.89-0.99 quiet, where NumPy's two OpenBLAS threads take
 * 0.53-0.72. With a busy process the pool mostly runs the caller alone (pool.c), so the
 * split costs at most 1.18x there (the thin 256x10 @ 10x784, whose panels pack the most). */
#define GD_PAR_GEMM_MNK ((int64_t)1 << 17)
/* The fewest rows (or columns) of one panel: each call packs its own copy of the operand it
 * reads whole, so thinner panels spend a growing share of their time packing. One thread
 * computing a product as panels of h rows, time / one whole call (median of 30, Python's
 * call included):
 *                   h = 16   32    64    128   256
 *   256x784 @ 784x256   1.31  1.17  1.04  1.02
 *   256x256 @ 256x256   1.46  1.23  1.05  1.00
 *   1000^3              1.32  1.15  1.07  1.09  1.01
 *   2000^3              1.82  1.42  1.20  1.19  1.06 */
#define GD_GEMM_PANEL_MIN 128
/* From GD_GEMM_BIG_MNK multiply-adds (~0.6 ms on 2 threads; 650^3) a piece has at least
 * GD_GEMM_PIECE_BIG rows. The repacking a panel pays grows with OpenBLAS's speed: its
 * AVX-512 (SkylakeX) kernels halve the compute and leave the packing as it was. One thread,
 * panels of h rows / one whole call, median of 5, on a 2-core AMD EPYC (Zen 5) VM, quiet:
 *                 h = 128   256   512   1024      (Haswell kernels forced: 128 / 256 / 512)
 *   1000^3            1.08  1.06  1.06              1.03  1.01  0.99
 *   2000^3            1.23  1.09  1.03  1.00        1.09  1.02  1.01
 *   4000^3            1.26  1.12  1.07  1.08        1.07  1.02  0.99
 * With 128-row pieces, sgemm on 2 threads took 1.11x (n=1000) and 1.24x (n=4000) the time
 * of NumPy's OpenBLAS on its own two threads, which share one packed copy. With 1024 rows,
 * and the result's memory kept from call to call (memory.c), 1.00-1.02x and 0.97-0.99x in
 * three runs of the bench. A late worker costs such a product at most a scheduler slice
 * (4-8 ms) against its 2-500 ms. */
#define GD_GEMM_BIG_MNK ((int64_t)1 << 28)
#define GD_GEMM_PIECE_BIG 1024
/* Whole products of a batch handed out at a time: about this many multiply-adds. */
#define GD_GEMM_BATCH_GRAIN_MNK ((int64_t)1 << 18)
/* int64 products (multiply-adds, plain loops at ~1 ns each: 2^18 is ~0.26 ms serial), where
 * a second thread clearly pays; not measured size by size. */
#define GD_PAR_IGEMM_MNK ((int64_t)1 << 18)

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

/* Makes OpenBLAS single-threaded, once per process: every product runs on gpudev's threads
 * (gemm.c), so that one pool that never waits for a descheduled thread serves BLAS too. */
void gd_blas_init(void);

#endif /* GPUDEV_CPU_THREADS_H */
