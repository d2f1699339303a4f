/* pool.h - the CPU backend's worker pool: parallel loops whose caller never waits for a
 * thread that has not started its share.
 *
 * One process-wide pool of worker threads, created on first need. A loop is cut into
 * pieces; the calling thread takes pieces itself and returns as soon as every piece is
 * done, so a worker that the operating system has not scheduled yet finds nothing left
 * when it wakes and nobody waits for it. Plain C11 + pthreads; no Python, no OpenMP.
 *
 * Rules for callers:
 * - fn(ctx, begin, end) may run on any thread, several at once on disjoint ranges; every
 *   index of [0, n) is passed exactly once. fn must not fork().
 * - One loop runs on the pool at a time. A loop started while another caller's loop is
 *   running (another thread, or a nested call from inside fn) runs whole on its own calling
 *   thread: it never waits for the other loop.
 * - Safe from any thread at any time, including after fork() (the child starts its own
 *   workers when it first needs them) and at process exit (workers never keep the process
 *   alive and nothing waits for them).
 * - Which threads run which pieces never changes a result's indices, only its timing:
 *   where no worker thread can be created a loop runs whole on the caller, and on a
 *   machine seen to have no idle core a loop uses only the workers already awake
 *   (GD_POOL_BACKOFF_NS in pool.c).
 */
#ifndef GD_CPU_POOL_H
#define GD_CPU_POOL_H

#include <stdint.h>

#define GD_POOL_MAX_THREADS 64 /* threads in one loop, the caller included */
#define GD_POOL_PIECES 8       /* default pieces per thread's part in gd_pool_for */

typedef void (*gd_pool_fn)(void *ctx, int64_t begin, int64_t end);

/* fn over [0, n) on up to nt threads (the caller included). Thread t owns part t of the
 * range (parts of equal length, edges on multiples of `align`) and runs it front to back
 * in `pieces` pieces (0: GD_POOL_PIECES; at most 65535); a thread that finishes early
 * takes pieces from the back of the other parts. Each worker starts on the same part on every call, so data
 * that fits in a core's cache stays there from one loop to the next. Serial when nt <= 1
 * or n <= align; nothing runs when n <= 0. */
void gd_pool_for(int nt, int64_t n, int64_t align, int pieces, gd_pool_fn fn, void *ctx);

/* fn over [0, n) on up to nt threads, `grain` items at a time to whichever thread asks
 * first (independent items whose data is new on each call, e.g. a batch of products).
 * The grain grows when n / grain exceeds 65535. Serial when nt <= 1 or n <= grain. */
void gd_pool_for_dynamic(int nt, int64_t n, int64_t grain, gd_pool_fn fn, void *ctx);

/* Keeps at most nt - 1 worker threads: the others finish the piece they hold and exit
 * (nobody waits for them). Call when the thread count is lowered; raising it needs no
 * call, workers are created when a loop first asks for them. */
void gd_pool_trim(int nt);

/* The monotonic clock the pool's spins are timed by, in nanoseconds. */
int64_t gd_pool_now_ns(void);

/* Worker threads now in the pool (for tests and diagnostics). */
int gd_pool_workers(void);

#ifdef GD_POOL_TEST_HOOKS
/* Test builds only: called on worker threads (thread = 1..) when a worker has seen a new
 * loop and not yet claimed anything, and after each claim before running the piece. */
typedef enum { GD_POOL_HOOK_WOKEN, GD_POOL_HOOK_CLAIMED } gd_pool_hook_point;
typedef void (*gd_pool_hook_fn)(gd_pool_hook_point where, int thread);
void gd_pool_set_test_hook(gd_pool_hook_fn hook);
/* The back-off after an oversubscribed machine is seen is off in test builds (so that
 * tests can count on sleeping workers being woken) unless turned on here; setting it
 * forgets what was seen, marking makes it last until the next setting. */
void gd_pool_test_set_backoff(int on);
void gd_pool_test_mark_oversubscribed(void);
long gd_pool_test_wake_calls(void); /* wake-up calls made for sleeping workers so far */
long gd_pool_test_kept_off_calls(void); /* sleeps a worker spent off its caller's CPU */
int gd_pool_test_live_threads(void);     /* workers spawned and not yet exited, retired ones too */
#endif

#endif /* GD_CPU_POOL_H */
