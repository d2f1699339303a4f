/* threads.c - the CPU backend's threads: the process-wide thread count (products included), how
 * many threads a piece of work is worth, the two parallel loops every kernel goes through (on
 * the worker pool of pool.c), and OpenBLAS held at one thread.
 */
#include "threads.h"

#include <stdatomic.h>

#include <cblas.h> /* scipy-openblas32: scipy_openblas_set_num_threads */

#include "backend_cpu.h"
#include "cpu.h"
#include "pool.h"
#include "port.h"

/* ------------------------------------------------------------------------------------------
 * the thread count
 *
 * One process-wide count drives gpudev's loops, matrix products included. The pool keeps at most
 * count - 1 workers: lowering the count retires the others (nobody waits for them), raising
 * it lets the next loop that wants more create them. The pool survives fork() by itself (a
 * child starts its own workers), so a child computes in parallel as its parent does.
 * ---------------------------------------------------------------------------------------- */

static atomic_int gd_threads; /* 0 until first asked */

/* The cores this process may run on: its affinity mask where the system has one (Linux:
 * a container or `taskset` may allow fewer than the machine has), else the online cores. */
static int gd_default_threads(void) { return gd_port_cpu_count(); }

int64_t gd_cpu_elementwise_parallel_from(void)
{
    return GD_PAR_ELEMENTWISE;
}

int gd_cpu_get_num_threads(void)
{
    int n = atomic_load_explicit(&gd_threads, memory_order_relaxed);
    if (n == 0) {
        /* Racing first callers compute the same value, so a plain store is enough. */
        n = gd_default_threads();
        atomic_store_explicit(&gd_threads, n, memory_order_relaxed);
    }
    return n;
}

/* OpenBLAS's own threads end each call with a wait for every one of them, which on a busy
 * machine stalls a product for a scheduler slice (a 256x784 @ 784x10 product took 16 ms
 * instead of 0.1 ms with 2 threads under load). OpenBLAS therefore runs single-threaded, and
 * gemm.c splits products over gpudev's pool. fork() needs nothing here: the child inherits
 * the setting. */
static gd_once_t gd_blas_once = GD_ONCE_INIT;

static void gd_blas_single(void) { scipy_openblas_set_num_threads(1); }

void gd_blas_init(void) { gd_once(&gd_blas_once, gd_blas_single); }

void gd_cpu_set_num_threads(int n)
{
    if (n < 1) n = 1;
    gd_blas_init();
    atomic_store_explicit(&gd_threads, n, memory_order_relaxed);
    gd_pool_trim(n);
}

/* ------------------------------------------------------------------------------------------
 * parallel loops
 *
 * Both run on the pool (pool.h): the caller takes pieces itself and returns when every piece
 * is done, so a worker that the operating system has not scheduled yet never holds up an
 * operation. The OpenMP loops they replace ended with a barrier that waited for every
 * thread: with another busy process per core, a 400x400 `b += b` then took ~8 ms (one
 * scheduler slice) instead of ~10 us.
 * ---------------------------------------------------------------------------------------- */

int gd_threads_for(int64_t work, int64_t min_work)
{
    if (work < min_work) return 1;
    int nt = gd_cpu_get_num_threads();
    if (nt <= 1) return 1;
    const int64_t useful = GD_MIN(work / GD_MAX(min_work / 2, (int64_t)1), (int64_t)GD_POOL_MAX_THREADS);
    return useful < nt ? (int)useful : nt;
}

/* Each thread keeps the same part of an array on every call, so data that fits in the caches
 * stays in the same core's cache from one operation to the next (handing chunks out first
 * come, first served measured up to 2x slower on repeated in-cache operations). */
void gd_parallel_for(int nt, int64_t n, int64_t align, gd_range_fn fn, void *ctx)
{
    gd_pool_for(nt, n, align, 0, fn, ctx);
}

void gd_parallel_for_dynamic(int nt, int64_t n, int64_t grain, gd_range_fn fn, void *ctx)
{
    gd_pool_for_dynamic(nt, n, grain, fn, ctx);
}
