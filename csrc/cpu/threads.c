/* threads.c - the CPU backend's threads: the process-wide thread count (also OpenBLAS's), how
 * many threads a piece of work is worth, the two parallel loops every kernel goes through, the
 * section in which OpenBLAS runs single-threaded, and what a child process does after fork().
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT under -std=c11 */

#include "threads.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include <cblas.h> /* scipy-openblas32: scipy_openblas_{get,set}_num_threads */

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend_cpu.h"
#include "cpu.h"

#define GD_MAX_LOOP_THREADS 64 /* memory bandwidth is saturated well before */
#define GD_STEAL_PIECES 8      /* pieces per thread's part in parallel loops */

/* ------------------------------------------------------------------------------------------
 * the thread count, OpenBLAS's, and fork()
 *
 * One process-wide count drives gpudev's OpenMP loops and OpenBLAS. It is passed to each
 * parallel region through num_threads() rather than omp_set_num_threads(), which would
 * only affect the calling thread. GNU OpenMP's pool does not survive fork(): a child that
 * entered a parallel region would hang, so after a fork the child runs everything serially.
 * ---------------------------------------------------------------------------------------- */

static atomic_int gd_threads; /* 0 until first asked */

#ifdef _OPENMP
static atomic_int gd_in_fork_child;
static pthread_once_t gd_fork_once = PTHREAD_ONCE_INIT;
static void gd_mark_fork_child(void) { atomic_store_explicit(&gd_in_fork_child, 1, memory_order_relaxed); }
static void gd_register_fork_handler(void) { pthread_atfork(NULL, NULL, gd_mark_fork_child); }
#endif

static int gd_default_threads(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)GD_MIN(n, (long)INT_MAX) : 1;
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

/* guarded by gd_blas_lock: */
static pthread_mutex_t gd_blas_lock = PTHREAD_MUTEX_INITIALIZER;
static int gd_blas_single_users;  /* batches now holding OpenBLAS at one thread */
static int gd_blas_saved_threads; /* its thread count to restore when the last one ends */

/* OpenBLAS single-threaded while a batch of products runs on gpudev's threads (see gemm.c);
 * nested and concurrent sections share one count. */
void gd_blas_single_begin(void)
{
    pthread_mutex_lock(&gd_blas_lock);
    if (gd_blas_single_users++ == 0) {
        gd_blas_saved_threads = scipy_openblas_get_num_threads();
        scipy_openblas_set_num_threads(1);
    }
    pthread_mutex_unlock(&gd_blas_lock);
}

void gd_blas_single_end(void)
{
    pthread_mutex_lock(&gd_blas_lock);
    if (--gd_blas_single_users == 0) scipy_openblas_set_num_threads(gd_blas_saved_threads);
    pthread_mutex_unlock(&gd_blas_lock);
}

void gd_cpu_set_num_threads(int n)
{
    if (n < 1) n = 1;
    pthread_mutex_lock(&gd_blas_lock);
    atomic_store_explicit(&gd_threads, n, memory_order_relaxed);
    if (gd_blas_single_users == 0)
        scipy_openblas_set_num_threads(n);
    else
        gd_blas_saved_threads = n; /* a batch holds OpenBLAS at 1 thread: applied when it ends */
    pthread_mutex_unlock(&gd_blas_lock);
}

/* ------------------------------------------------------------------------------------------
 * parallel loops
 * ---------------------------------------------------------------------------------------- */

/* Threads worth using for `work` items when a thread should get at least min_work / 2. */
int gd_threads_for(int64_t work, int64_t min_work)
{
#ifdef _OPENMP
    if (work < min_work) return 1;
    int nt = gd_cpu_get_num_threads();
    if (nt <= 1 || atomic_load_explicit(&gd_in_fork_child, memory_order_relaxed)) return 1;
    int64_t useful = GD_MIN(work / (min_work / 2), (int64_t)GD_MAX_LOOP_THREADS);
    if (useful < nt) nt = (int)useful;
    pthread_once(&gd_fork_once, gd_register_fork_handler); /* before the first region */
    return nt;
#else
    (void)work;
    (void)min_work;
    return 1;
#endif
}

/* fn(ctx, begin, end) over [0, n) on nt threads. Each thread owns one contiguous part of
 * the range (edges on multiples of `align` items) and works through it in pieces; a thread
 * that finishes early takes the remaining pieces of the others. On an idle machine every
 * thread thus handles the same part of an array on every call, so data that fits in the
 * caches stays in the same core's cache from one operation to the next (handing chunks out
 * first come, first served measured up to 2x slower on repeated in-cache operations); on a
 * busy one, a core shared with another process does not hold up the whole loop. */
void gd_parallel_for(int nt, int64_t n, int64_t align, gd_range_fn fn, void *ctx)
{
    if (nt <= 1 || n <= align) {
        fn(ctx, 0, n);
        return;
    }
#ifdef _OPENMP
    int64_t part = (n + nt - 1) / nt;
    part = (part + align - 1) / align * align;
    int64_t piece = (part + GD_STEAL_PIECES - 1) / GD_STEAL_PIECES;
    piece = (piece + align - 1) / align * align;
    struct {
        _Alignas(64) atomic_llong next; /* next piece of this part; one cache line each */
    } cursor[GD_MAX_LOOP_THREADS];
    for (int t = 0; t < nt; t++) atomic_init(&cursor[t].next, 0);
    GD_PRAGMA(omp parallel num_threads(nt))
    {
        const int me = omp_get_thread_num(); /* the runtime may grant fewer than nt threads */
        for (int k = 0; k < nt; k++) {
            const int owner = (me + k) % nt;
            const int64_t begin = (int64_t)owner * part, end = GD_MIN(n, begin + part);
            for (;;) {
                int64_t b = begin + piece * atomic_fetch_add_explicit(&cursor[owner].next, 1, memory_order_relaxed);
                if (b >= end) break;
                fn(ctx, b, GD_MIN(end, b + piece));
            }
        }
    }
#else
    fn(ctx, 0, n);
#endif
}

/* The same for independent items whose data is new each call (whole matrix products):
 * handed out `grain` at a time to whichever thread is free. */
void gd_parallel_for_dynamic(int nt, int64_t n, int64_t grain, gd_range_fn fn, void *ctx)
{
    if (nt <= 1 || n <= grain) {
        fn(ctx, 0, n);
        return;
    }
#ifdef _OPENMP
    const int64_t chunks = (n + grain - 1) / grain;
    GD_PRAGMA(omp parallel for num_threads(nt) schedule(dynamic, 1))
    for (int64_t c = 0; c < chunks; c++) fn(ctx, c * grain, GD_MIN(n, (c + 1) * grain));
#else
    fn(ctx, 0, n);
#endif
}

