/* test_pool.c - checks of the CPU worker pool (csrc/cpu/pool.c) on its own.
 *
 * Every index is processed exactly once, with the documented edges, for random sizes,
 * alignments, piece counts and thread counts (1..16 on any machine); with concurrent and
 * nested callers; while the thread count changes; in a fork child; with workers held back
 * before or after claiming a piece (a test hook compiled in with GD_POOL_TEST_HOOKS); and
 * with busy processes on every core. Checks results, never times: the one measurement is
 * the CPU time a waiting caller uses, with a wide margin.
 *
 *   test_pool [seed [name]]   exit status 0 when every check passes; name: run only the
 *                             tests whose name starts with it
 */
#define _GNU_SOURCE

#include "pool.h"

#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "busy_procs.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SLOW_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define SLOW_BUILD 1
#endif
#endif
#ifndef SLOW_BUILD
#define SLOW_BUILD 0
#endif
#define SCALE(n) (SLOW_BUILD ? (n) / 3 + 1 : (n)) /* sanitizers run 5-20x slower */

/* ------------------------------------------------------------------------------------------
 * checks, randomness, small helpers
 * ---------------------------------------------------------------------------------------- */

static atomic_int failures;

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            atomic_fetch_add(&failures, 1);                                       \
            fprintf(stderr, "FAIL %s:%d (%s): ", __FILE__, __LINE__, #cond);      \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
        }                                                                         \
    } while (0)

static uint64_t rng_next(uint64_t *s) /* xorshift64* */
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static int64_t rng_range(uint64_t *s, int64_t lo, int64_t hi) { return lo + (int64_t)(rng_next(s) % (uint64_t)(hi - lo + 1)); }

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Polls pred for up to `seconds`; false if it never held. */
static int wait_for(int (*pred)(void), double seconds)
{
    double until = now_s() + seconds;
    while (!pred() && now_s() < until) sleep_us(200);
    return pred();
}

static int ncpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* ------------------------------------------------------------------------------------------
 * the test hook: gates that hold workers back, and random delays
 * ---------------------------------------------------------------------------------------- */

static atomic_int gate_closed;   /* workers reaching the gate's point wait while this is set */
static atomic_int gate_point;    /* gd_pool_hook_point the gate sits at */
static atomic_int gate_thread;   /* 0: every worker, else only this thread index */
static atomic_int gate_waiting;  /* workers now held at the gate */
static atomic_int delay_max_us;  /* > 0: each hook call sleeps a random 0..max us, half the time */
static atomic_ullong hook_seen;  /* bit t: worker thread t has called the hook */

static void test_hook(gd_pool_hook_point where, int thread)
{
    atomic_fetch_or(&hook_seen, 1ull << (thread & 63));
    int max = atomic_load(&delay_max_us);
    if (max > 0) {
        uint64_t s = (uint64_t)now_s() * 1000003u ^ (uint64_t)thread * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)&s;
        if (rng_next(&s) & 1) sleep_us((long)(rng_next(&s) % (uint64_t)max));
    }
    if ((int)where != atomic_load(&gate_point)) return;
    int only = atomic_load(&gate_thread);
    if (only && only != thread) return;
    if (!atomic_load(&gate_closed)) return;
    atomic_fetch_add(&gate_waiting, 1);
    while (atomic_load(&gate_closed)) sleep_us(100);
    atomic_fetch_sub(&gate_waiting, 1);
}

static int no_worker_held(void) { return atomic_load(&gate_waiting) == 0; }
static int one_worker_held(void) { return atomic_load(&gate_waiting) == 1; }
static int all_workers_held(void) { return atomic_load(&gate_waiting) == 3; } /* of a 4-thread loop */

static int no_live_worker(void) { return gd_pool_test_live_threads() == 0; }

/* Retires every worker and waits for their threads to exit: a worker woken for an older loop
 * could otherwise still be on its way to the hook and be held by a gate closed after this. */
static void fresh_workers(void)
{
    gd_pool_trim(1);
    CHECK(wait_for(no_live_worker, 10.0), "retired workers still running: %d", gd_pool_test_live_threads());
}

static void gate_close(gd_pool_hook_point where, int thread)
{
    atomic_store(&gate_point, (int)where);
    atomic_store(&gate_thread, thread);
    atomic_store(&gate_closed, 1);
}

/* ------------------------------------------------------------------------------------------
 * coverage: a loop body that counts every index it is given and checks its edges
 * ---------------------------------------------------------------------------------------- */

typedef struct cover {
    int64_t n;
    int64_t align;     /* begin and end must be multiples (end may be n) */
    int64_t part;      /* > 0: a range never crosses a multiple of part */
    int64_t max_len;   /* > 0: no range longer than this */
    atomic_uchar *hits;
    pthread_t caller;
    atomic_long calls, by_caller, bad_edges;
    int (*first_piece_wait)(void); /* if set, the caller's first piece waits for it */
    atomic_int started;
    int64_t *order;                /* if set, begins of the caller's ranges in order */
    atomic_long norder;
} cover;

static void cover_init(cover *c, int64_t n, int64_t align)
{
    memset(c, 0, sizeof *c);
    c->n = n;
    c->align = align < 1 ? 1 : align;
    c->hits = calloc(n > 0 ? (size_t)n : 1, 1);
    c->caller = pthread_self();
    if (!c->hits) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
}

static void cover_fn(void *ctx, int64_t b, int64_t e)
{
    cover *c = ctx;
    atomic_fetch_add(&c->calls, 1);
    int mine = pthread_equal(pthread_self(), c->caller);
    if (mine && c->first_piece_wait && !atomic_exchange(&c->started, 1)) wait_for(c->first_piece_wait, 20.0);
    if (mine) {
        atomic_fetch_add(&c->by_caller, 1);
        if (c->order) c->order[atomic_fetch_add(&c->norder, 1)] = b;
    }
    int ok = 0 <= b && b < e && e <= c->n && b % c->align == 0 && (e % c->align == 0 || e == c->n);
    if (c->part > 0) ok = ok && b / c->part == (e - 1) / c->part;
    if (c->max_len > 0) ok = ok && e - b <= c->max_len;
    if (!ok) {
        if (atomic_fetch_add(&c->bad_edges, 1) == 0)
            fprintf(stderr, "  bad range [%" PRId64 ", %" PRId64 ") n=%" PRId64 " align=%" PRId64 " part=%" PRId64
                            " max_len=%" PRId64 "\n", b, e, c->n, c->align, c->part, c->max_len);
        if (b < 0 || e > c->n) return;
    }
    for (int64_t i = b; i < e; i++) atomic_fetch_add_explicit(&c->hits[i], 1, memory_order_relaxed);
}

/* Every index exactly once and every range well formed; frees the counts. */
static int cover_done(cover *c, const char *what)
{
    int64_t bad = -1;
    for (int64_t i = 0; i < c->n && bad < 0; i++)
        if (atomic_load_explicit(&c->hits[i], memory_order_relaxed) != 1) bad = i;
    CHECK(bad < 0, "%s: index %" PRId64 " of %" PRId64 " processed %d times", what, bad, c->n,
          bad < 0 ? 1 : (int)c->hits[bad]);
    CHECK(atomic_load(&c->bad_edges) == 0, "%s: %ld ranges with wrong edges", what, atomic_load(&c->bad_edges));
    free(c->hits);
    c->hits = NULL;
    return bad < 0 && atomic_load(&c->bad_edges) == 0;
}

/* The part length gd_pool_for documents: ceil(n / nt) rounded up to align. */
static int64_t part_len(int nt, int64_t n, int64_t align)
{
    int64_t p = (n + nt - 1) / nt;
    return (p + align - 1) / align * align;
}

/* One random loop, static or dynamic, checked. `strict`: the pool is not shared with other
 * callers, so piece edges and counts are checked too (a busy pool runs the whole range). */
static int random_loop(uint64_t *rng, int strict, const char *what)
{
    static const int64_t aligns[] = {1, 1, 2, 3, 7, 16, 64, 100, 4096};
    int64_t n = rng_range(rng, 0, 3) == 0 ? rng_range(rng, 0, 40) : rng_range(rng, 0, SLOW_BUILD ? 30000 : 200000);
    int nt = (int)rng_range(rng, 1, 16);
    cover c;
    if (rng_range(rng, 0, 3) == 0) {
        int64_t grain = rng_range(rng, 0, 2) == 0 ? 1 : rng_range(rng, 1, 5000);
        cover_init(&c, n, 1);
        int64_t g = grain < 1 ? 1 : grain;
        if (g > 0 && n / g >= 0xffff) g = (n + 0xfffe) / 0xffff;
        if (strict && nt > 1 && n > g) c.align = g, c.max_len = g;
        gd_pool_for_dynamic(nt, n, grain, cover_fn, &c);
    } else {
        int64_t align = aligns[rng_range(rng, 0, 8)];
        int pieces = (int)(rng_range(rng, 0, 9) == 0 ? rng_range(rng, 0, 100000) : rng_range(rng, 0, 20));
        cover_init(&c, n, align);
        if (strict && nt > 1 && n > align) c.part = part_len(nt, n, align);
        gd_pool_for(nt, n, align, pieces, cover_fn, &c);
        int eff = pieces < 1 ? GD_POOL_PIECES : pieces > 0xffff ? 0xffff : pieces;
        if (strict && n > 0)
            CHECK(atomic_load(&c.calls) <= (long)nt * eff, "%s: %ld calls for nt=%d, %d pieces", what,
                  atomic_load(&c.calls), nt, eff);
    }
    CHECK(n > 0 || atomic_load(&c.calls) == 0, "%s: fn called for n=%" PRId64, what, n);
    return cover_done(&c, what);
}

/* ------------------------------------------------------------------------------------------
 * tests
 * ---------------------------------------------------------------------------------------- */

static void test_random_loops(uint64_t seed)
{
    uint64_t rng = seed;
    for (int i = 0; i < SCALE(3000); i++)
        if (!random_loop(&rng, 1, "random loop")) break;
}

/* With every worker held before its first claim, the caller runs everything itself: its
 * own part front to back, then each other part back to front (thieves take the back). */
static void test_steal_order(void)
{
    const int nt = 4;
    const int64_t n = 4 * 8 * 10, align = 10; /* 4 parts of 8 pieces of 10 */
    int64_t order[64];
    fresh_workers();
    gate_close(GD_POOL_HOOK_WOKEN, 0);
    cover c;
    cover_init(&c, n, align);
    c.order = order;
    c.first_piece_wait = all_workers_held;
    gd_pool_for(nt, n, align, 8, cover_fn, &c);
    CHECK(atomic_load(&gate_waiting) == 3, "steal order: %d workers held, expected 3", atomic_load(&gate_waiting));
    CHECK(atomic_load(&c.by_caller) == 32, "steal order: caller ran %ld of 32 pieces", atomic_load(&c.by_caller));
    int k = 0, in_order = atomic_load(&c.norder) == 32;
    for (int i = 0; i < 8 && in_order; i++) in_order = order[k++] == i * 10;
    for (int p = 1; p < 4 && in_order; p++)
        for (int i = 7; i >= 0 && in_order; i--) in_order = order[k++] == p * 80 + i * 10;
    CHECK(in_order, "steal order: caller's pieces not own-part-forward, others-backward");
    cover_done(&c, "steal order");
    atomic_store(&gate_closed, 0);
    wait_for(no_worker_held, 10.0);
}

/* Fifteen sleeping workers: the caller wakes two, each woken worker wakes two more, so
 * every one of them wakes (and calls the hook) even if the first ones have already done
 * all the work. */
static int all_fifteen_seen(void) { return (atomic_load(&hook_seen) & 0xfffeull) == 0xfffeull; }

static void test_wake_tree(void)
{
    cover c;
    cover_init(&c, 16 * 64, 1);
    gd_pool_for(16, c.n, 1, 0, cover_fn, &c);
    cover_done(&c, "wake tree, first loop");
    CHECK(gd_pool_workers() >= 15, "wake tree: %d workers", gd_pool_workers());
    sleep_us(50000); /* far beyond the workers' spin: all asleep */
    atomic_store(&hook_seen, 0);
    cover_init(&c, 16 * 64, 1);
    gd_pool_for(16, c.n, 1, 0, cover_fn, &c);
    cover_done(&c, "wake tree");
    CHECK(wait_for(all_fifteen_seen, 20.0), "wake tree: workers seen %#llx, expected 0xfffe",
          (unsigned long long)atomic_load(&hook_seen));
}

/* On a machine seen oversubscribed, loops wake no sleeping worker (and still come out
 * right); afterwards the workers left asleep are woken as usual. */
static int three_seen(void) { return (atomic_load(&hook_seen) & 0xeull) == 0xeull; }

static void test_backoff(void)
{
    cover c;
    cover_init(&c, 4000, 1);
    gd_pool_for(4, c.n, 1, 0, cover_fn, &c);
    cover_done(&c, "back-off, first loop");
    sleep_us(30000); /* workers asleep */
    gd_pool_test_set_backoff(1);
    gd_pool_test_mark_oversubscribed();
    const long wakes = gd_pool_test_wake_calls();
    for (int i = 0; i < 20; i++) {
        cover_init(&c, 4000 + i, 1);
        gd_pool_for(4, c.n, 1, 0, cover_fn, &c);
        if (!cover_done(&c, "back-off")) break;
        cover_init(&c, 4000 + i, 1);
        gd_pool_for_dynamic(4, c.n, 10, cover_fn, &c);
        if (!cover_done(&c, "back-off, dynamic")) break;
    }
    CHECK(gd_pool_test_wake_calls() == wakes, "back-off: %ld wake-up calls while the machine counted as busy",
          gd_pool_test_wake_calls() - wakes);
    /* Forgotten (and off, since a real wake-up call slowed by this machine's load would
     * start a new window): the workers left asleep are woken by the next loop. */
    gd_pool_test_set_backoff(0);
    atomic_store(&hook_seen, 0);
    cover_init(&c, 4000, 1);
    gd_pool_for(4, c.n, 1, 0, cover_fn, &c);
    cover_done(&c, "after back-off");
    CHECK(wait_for(three_seen, 20.0), "after back-off: workers seen %#llx, expected 0xe",
          (unsigned long long)atomic_load(&hook_seen));
}

/* Workers held before claiming: the loop ends without them, its context can be freed,
 * and when they are let go they run nothing of it (ASan catches a touch of the freed
 * context) and the next loops still come out right. */
static void test_late_workers(void)
{
    const int nt = 4;
    const int64_t n = 100000;
    fresh_workers();
    gate_close(GD_POOL_HOOK_WOKEN, 0);
    cover *a = malloc(sizeof *a);
    cover_init(a, n, 1);
    a->first_piece_wait = all_workers_held;
    gd_pool_for(nt, n, 1, 0, cover_fn, a);
    CHECK(atomic_load(&gate_waiting) == 3, "late workers: %d held, expected 3", atomic_load(&gate_waiting));
    CHECK(atomic_load(&a->by_caller) == atomic_load(&a->calls), "late workers: a held worker ran a piece");
    atomic_uchar *a_hits = a->hits;
    a->hits = NULL;
    free(a); /* the finished loop's context is gone */

    cover b; /* a newer loop while the late workers still hold the old generation */
    cover_init(&b, n, 1);
    gd_pool_for(nt, n, 1, 0, cover_fn, &b);
    cover_done(&b, "loop while workers held");

    atomic_store(&gate_closed, 0);
    CHECK(wait_for(no_worker_held, 10.0), "late workers never left the gate");
    for (int r = 0; r < 20; r++) {
        cover c;
        cover_init(&c, n, 1);
        gd_pool_for(nt, n, 1, 0, cover_fn, &c);
        if (!cover_done(&c, "loop after late workers")) break;
    }
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++)
        if (atomic_load(&a_hits[i]) != 1) bad = i;
    CHECK(bad < 0, "late workers: finished loop's index %" PRId64 " changed afterwards", bad);
    free(a_hits);
}

/* A worker that has claimed a piece and stalls: the caller waits for that piece (it must),
 * asleep rather than spinning; meanwhile other callers run their loops whole on their own
 * thread, and a fork child gets a working pool of its own. */
typedef struct held_loop {
    cover c;
    atomic_int returned;
} held_loop;

static void *held_loop_main(void *arg)
{
    held_loop *h = arg;
    h->c.caller = pthread_self();
    gd_pool_for(2, h->c.n, 1, 0, cover_fn, &h->c);
    atomic_store(&h->returned, 1);
    return NULL;
}

static double thread_cpu_s(pthread_t t) /* -1 where threads have no CPU clock (macOS) */
{
#if defined(__linux__)
    clockid_t id;
    struct timespec ts;
    if (pthread_getcpuclockid(t, &id) == 0 && clock_gettime(id, &ts) == 0)
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#endif
    (void)t;
    return -1;
}

static void check_busy_pool_runs_whole_range(void)
{
    cover c;
    cover_init(&c, 5000, 1);
    gd_pool_for(8, c.n, 1, 0, cover_fn, &c);
    CHECK(atomic_load(&c.calls) == 1 && atomic_load(&c.by_caller) == 1,
          "busy pool: static loop made %ld calls, %ld on the caller (expected 1 whole range)",
          atomic_load(&c.calls), atomic_load(&c.by_caller));
    cover_done(&c, "busy pool, static");
    cover_init(&c, 5000, 1);
    gd_pool_for_dynamic(8, c.n, 7, cover_fn, &c);
    CHECK(atomic_load(&c.calls) == 1 && atomic_load(&c.by_caller) == 1,
          "busy pool: dynamic loop made %ld calls (expected 1 whole range)", atomic_load(&c.calls));
    cover_done(&c, "busy pool, dynamic");
}

static int child_pool_works(void)
{
    atomic_store(&gate_closed, 0); /* the child's copies of the gate and the failure count */
    atomic_store(&failures, 0);
    if (gd_pool_workers() != 0) {
        fprintf(stderr, "fork child: starts with %d workers, expected none\n", gd_pool_workers());
        return 1;
    }
    uint64_t rng = 77;
    for (int i = 0; i < SCALE(200); i++)
        if (!random_loop(&rng, 1, "fork child")) return 1;
    cover c;
    cover_init(&c, 100000, 1);
    gd_pool_for(4, c.n, 1, 0, cover_fn, &c);
    if (!cover_done(&c, "fork child")) return 1;
    if (gd_pool_workers() < 3) {
        fprintf(stderr, "fork child: %d workers after a 4-thread loop, expected 3 or more\n", gd_pool_workers());
        return 1;
    }
    return atomic_load(&failures) ? 1 : 0;
}

static int os_threads(void) /* threads of this process, or -1 where /proc is missing */
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

/* Before a fork from this threaded process: waits until every worker has started (called
 * the hook once) and every retired one has exited, the process then holding just the
 * workers and `others` threads besides main. A sanitizer runtime may hold internal locks
 * while a thread starts or exits, and a fork child would inherit them held. */
static void slow_fn(void *ctx, int64_t b, int64_t e)
{
    (void)ctx;
    (void)b;
    (void)e;
    sleep_us(200);
}

static int settled_threads;
static int threads_settled(void) { int n = os_threads(); return n < 0 || n == settled_threads; }

static void settle_workers(int others)
{
    const int nw = gd_pool_workers();
    const unsigned long long want = nw >= 63 ? ~1ull : ((1ull << nw) - 1) << 1;
    atomic_store(&hook_seen, 0);
    double until = now_s() + 20.0;
    while ((atomic_load(&hook_seen) & want) != want && now_s() < until)
        gd_pool_for(nw + 1, 8 * (nw + 1), 1, 8, slow_fn, NULL);
    settled_threads = 1 + others + nw;
    wait_for(threads_settled, 20.0);
}

/* Waits for a child process for up to `seconds`; its exit status, or -1 (killed). */
static int wait_child(pid_t pid, double seconds)
{
    int status = 0;
    double until = now_s() + seconds;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (now_s() > until) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        sleep_us(1000);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_claimed_worker(void)
{
    settle_workers(0);
    held_loop h = {0};
    cover_init(&h.c, 200000, 1);
    h.c.first_piece_wait = one_worker_held;
    gate_close(GD_POOL_HOOK_CLAIMED, 1);
    pthread_t t;
    pthread_create(&t, NULL, held_loop_main, &h);
    CHECK(wait_for(one_worker_held, 20.0), "claimed worker: worker 1 never claimed a piece");

    /* the caller has every other piece done well within this, then sleeps */
    sleep_us(100000);
    double cpu0 = thread_cpu_s(t), t0 = now_s();
    sleep_us(400000);
    double cpu1 = thread_cpu_s(t), wall = now_s() - t0;
    CHECK(!atomic_load(&h.returned), "claimed worker: loop returned before a claimed piece was done");
    if (cpu0 >= 0 && cpu1 >= 0)
        CHECK(cpu1 - cpu0 < wall / 4, "claimed worker: waiting caller used %.3f s of CPU in %.3f s", cpu1 - cpu0, wall);
    else
        printf("(no per-thread CPU clock here: a waiting caller's CPU time is not checked) ");

    check_busy_pool_runs_whole_range();

    pid_t pid = fork(); /* with another thread inside a loop (settled before it began) */
    if (pid == 0) _exit(child_pool_works());
    CHECK(wait_child(pid, 120.0) == 0, "fork during a loop: child failed or hung");

    atomic_store(&gate_closed, 0);
    pthread_join(t, NULL);
    CHECK(atomic_load(&h.returned), "claimed worker: loop did not return");
    cover_done(&h.c, "claimed worker");
}

/* Callers on several threads at once, with random delays in the workers, and nested loops
 * (fn starting a loop). Whichever caller holds the pool, every loop is right. */
typedef struct nested_ctx {
    cover *outer;
    atomic_long inner_ok;
} nested_ctx;

static void nested_fn(void *ctx, int64_t b, int64_t e)
{
    nested_ctx *nc = ctx;
    cover_fn(nc->outer, b, e);
    cover inner;
    cover_init(&inner, 3000, 1);
    if (b & 1)
        gd_pool_for(4, inner.n, 1, 0, cover_fn, &inner);
    else
        gd_pool_for_dynamic(4, inner.n, 5, cover_fn, &inner);
    if (cover_done(&inner, "nested loop")) atomic_fetch_add(&nc->inner_ok, 1);
}

typedef struct caller_arg {
    uint64_t seed;
    int loops;
} caller_arg;

static void *caller_main(void *arg)
{
    caller_arg *a = arg;
    for (int i = 0; i < a->loops; i++) {
        if (i % 10 == 0) {
            cover outer;
            cover_init(&outer, rng_range(&a->seed, 2, 200), 1);
            nested_ctx nc = {&outer, 0};
            int nt = (int)rng_range(&a->seed, 2, 16);
            gd_pool_for(nt, outer.n, 1, 0, nested_fn, &nc);
            cover_done(&outer, "nested outer loop");
            CHECK(atomic_load(&nc.inner_ok) == atomic_load(&outer.calls), "nested: %ld of %ld inner loops right",
                  atomic_load(&nc.inner_ok), atomic_load(&outer.calls));
        } else if (!random_loop(&a->seed, 0, "concurrent callers")) {
            break;
        }
    }
    return NULL;
}

static void run_callers(int ncallers, int loops, uint64_t seed)
{
    pthread_t t[16];
    caller_arg a[16];
    for (int i = 0; i < ncallers; i++) {
        a[i] = (caller_arg){seed + 1000u * (uint64_t)i + 1, loops};
        pthread_create(&t[i], NULL, caller_main, &a[i]);
    }
    for (int i = 0; i < ncallers; i++) pthread_join(t[i], NULL);
}

static void test_concurrent_callers(uint64_t seed)
{
    run_callers(6, SCALE(300), seed);
    atomic_store(&delay_max_us, 300);
    run_callers(4, SCALE(150), seed + 7);
    atomic_store(&delay_max_us, 0);
}

/* The thread count changing under running loops: workers come and go. */
static atomic_int stop_trimming;

static void *trimmer_main(void *arg)
{
    uint64_t rng = (uint64_t)(uintptr_t)arg;
    while (!atomic_load(&stop_trimming)) {
        gd_pool_trim((int)rng_range(&rng, 1, 16));
        sleep_us(rng_range(&rng, 0, 2000));
    }
    return NULL;
}

static int base_threads; /* threads of this process besides the workers */
static int back_to_base(void) { return os_threads() == base_threads; }

static void test_thread_count_changes(uint64_t seed)
{
    const int base = base_threads = os_threads() - gd_pool_workers();
    pthread_t t;
    atomic_store(&stop_trimming, 0);
    pthread_create(&t, NULL, trimmer_main, (void *)(uintptr_t)(seed | 1));
    run_callers(3, SCALE(400), seed + 99);
    atomic_store(&stop_trimming, 1);
    pthread_join(t, NULL);

    gd_pool_trim(1);
    CHECK(gd_pool_workers() == 0, "trim(1) left %d workers", gd_pool_workers());
    if (base > 0)
        CHECK(wait_for(back_to_base, 20.0), "retired workers did not exit: %d threads, %d expected",
              os_threads(), base);
    cover c;
    cover_init(&c, 50000, 1);
    gd_pool_for(16, c.n, 1, 0, cover_fn, &c);
    cover_done(&c, "loop after trim");
    CHECK(gd_pool_workers() == 15, "16-thread loop after trim: %d workers, expected 15", gd_pool_workers());
}

static void test_fork(void)
{
    cover c;
    cover_init(&c, 100000, 1);
    gd_pool_for(8, c.n, 1, 0, cover_fn, &c); /* the parent has workers */
    cover_done(&c, "before fork");
    settle_workers(0);
    pid_t pid = fork();
    if (pid == 0) _exit(child_pool_works());
    CHECK(wait_child(pid, 120.0) == 0, "fork: child failed or hung");
}

/* Busy processes on every core (and one more): workers are descheduled for whole slices. */
static void test_under_load(uint64_t seed)
{
    busy_start(ncpus() + 1, 300);
    uint64_t rng = seed ^ 0x5555;
    for (int i = 0; i < SCALE(1500); i++)
        if (!random_loop(&rng, 1, "under load")) break;
    run_callers(3, SCALE(200), seed + 3);
    busy_stop();
}

/* ------------------------------------------------------------------------------------------
 * checks in a fresh process (this program run again with --child): pthread_create failing,
 * and the process ending whatever its workers do. A fresh process, rather than a fork,
 * holds only threads of its own, as a real program would.
 * ---------------------------------------------------------------------------------------- */

static const char *self_path;

static int run_child(const char *mode)
{
    pid_t pid = fork();
    if (pid == 0) {
        execl(self_path, self_path, "--child", mode, (char *)NULL);
        _exit(127);
    }
    return pid < 0 ? -1 : wait_child(pid, 120.0);
}

/* pthread_create failing (a process limit): loops run on the threads there are, and a new
 * thread count tries again. */
static int child_no_threads(void)
{
    if (getuid() == 0 && setuid(65534) != 0) return 10; /* root ignores RLIMIT_NPROC */
    struct rlimit lim;
    getrlimit(RLIMIT_NPROC, &lim);
    const rlim_t soft = lim.rlim_cur;
    lim.rlim_cur = 1;
    if (setrlimit(RLIMIT_NPROC, &lim) != 0) return 11;
    uint64_t rng = 5;
    for (int i = 0; i < SCALE(300); i++)
        if (!random_loop(&rng, 0, "no threads")) return 12; /* whole ranges: nothing to split over */
    if (gd_pool_workers() != 0) return 13;
    lim.rlim_cur = soft;
    if (setrlimit(RLIMIT_NPROC, &lim) != 0) return 14;
    gd_pool_trim(8);
    cover c;
    cover_init(&c, 50000, 1);
    gd_pool_for(4, c.n, 1, 0, cover_fn, &c);
    if (!cover_done(&c, "after the limit")) return 15;
    return gd_pool_workers() == 3 ? 0 : 16;
}

static void test_no_threads(void)
{
    int rc = run_child("no-threads");
    CHECK(rc == 0, "thread limit: child exit status %d", rc);
}

static void atexit_loop(void)
{
    cover c;
    cover_init(&c, 100000, 1);
    gd_pool_for(4, c.n, 1, 0, cover_fn, &c);
    if (!cover_done(&c, "loop in an atexit handler")) _exit(21);
}

static void *stuck_caller_main(void *arg)
{
    (void)arg;
    cover c;
    cover_init(&c, 100000, 1);
    c.first_piece_wait = one_worker_held;
    gd_pool_for(2, c.n, 1, 0, cover_fn, &c);
    return NULL;
}

/* Loops have left 7 workers spinning, then: exit at once (0), exit with the workers
 * asleep (1), a loop in an atexit handler (2), exit while another thread's loop waits for
 * a worker stuck holding a piece (3). Each must end with status 0. */
static int child_exit(int mode)
{
    cover c;
    cover_init(&c, 100000, 1);
    gd_pool_for(8, c.n, 1, 0, cover_fn, &c);
    if (!cover_done(&c, "exit child")) return 20;
    if (mode == 1) sleep_us(300000);
    if (mode == 2) atexit(atexit_loop);
    if (mode == 3) {
        gate_close(GD_POOL_HOOK_CLAIMED, 1);
        pthread_t t;
        pthread_create(&t, NULL, stuck_caller_main, NULL);
        if (!wait_for(one_worker_held, 20.0)) return 22;
    }
    exit(0);
}

static void test_exit(void)
{
    static const char *modes[] = {"exit-0", "exit-1", "exit-2", "exit-3"};
    for (int m = 0; m < 4; m++) {
        int rc = run_child(modes[m]);
        CHECK(rc == 0, "%s: status %d (-1: hung or killed)", modes[m], rc);
    }
}

static int child_main(const char *mode)
{
    if (strcmp(mode, "no-threads") == 0) return child_no_threads();
    if (strncmp(mode, "exit-", 5) == 0) return child_exit(atoi(mode + 5));
    fprintf(stderr, "unknown child mode %s\n", mode);
    return 2;
}

/* A sleeping worker keeps off the CPU of the caller that last announced a job (its mask is
 * its own less that CPU), and has its own mask back whenever it runs a piece. Needs two
 * allowed CPUs; the caller is pinned to one of them for the test. Linux only (port.h): not
 * in a build of the POSIX side alone. */
#if defined(__linux__) && !defined(GD_PORT_POSIX_ONLY)
static cpu_set_t keep_off_full;
static int keep_off_cpu;
static atomic_int keep_off_worker_pieces, keep_off_narrow_pieces;

static int worker_ran_a_piece(void) { return atomic_load(&keep_off_worker_pieces) > 0; }

static void keep_off_fn(void *ctx, int64_t b, int64_t e)
{
    cover_fn(ctx, b, e);
    cover *c = ctx;
    if (pthread_equal(pthread_self(), c->caller)) {
        wait_for(worker_ran_a_piece, 10.0); /* leave the workers pieces to run */
        return;
    }
    cpu_set_t now;
    atomic_fetch_add(&keep_off_worker_pieces, 1);
    if (sched_getaffinity(0, sizeof now, &now) != 0 || !CPU_EQUAL(&now, &keep_off_full))
        atomic_fetch_add(&keep_off_narrow_pieces, 1);
}

/* Worker threads whose mask lacks keep_off_cpu and is otherwise the full one, of `n`
 * found; -1 where /proc is missing. */
static int workers_kept_off(int *n)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int kept = 0;
    *n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char path[300], name[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = e->d_name[0] != '.' ? fopen(path, "r") : NULL;
        if (!f) continue;
        if (!fgets(name, sizeof name, f)) name[0] = 0;
        fclose(f);
        if (strncmp(name, "gpudev-pool", 11) != 0) continue;
        cpu_set_t m, want = keep_off_full;
        CPU_CLR(keep_off_cpu, &want);
        (*n)++;
        kept += sched_getaffinity((pid_t)atoi(e->d_name), sizeof m, &m) == 0 && CPU_EQUAL(&m, &want);
    }
    closedir(d);
    return kept;
}

static void test_keep_off_caller(void)
{
    cpu_set_t one;
    if (sched_getaffinity(0, sizeof keep_off_full, &keep_off_full) != 0 || CPU_COUNT(&keep_off_full) < 2) {
        printf("(fewer than 2 allowed CPUs: nothing to keep off) ");
        return;
    }
    gd_pool_trim(1); /* fresh workers, started before the caller is pinned: they get the full mask */
    cover c;
    cover_init(&c, 64, 1);
    gd_pool_for(3, c.n, 1, 0, cover_fn, &c);
    cover_done(&c, "keep off: start");
    for (keep_off_cpu = 0; !CPU_ISSET(keep_off_cpu, &keep_off_full); keep_off_cpu++) {
    }
    CPU_ZERO(&one);
    CPU_SET(keep_off_cpu, &one);
    CHECK(sched_setaffinity(0, sizeof one, &one) == 0, "keep off: cannot pin the caller to CPU %d", keep_off_cpu);
    const long before = gd_pool_test_kept_off_calls();
    for (int round = 0; round < 3; round++) {
        atomic_store(&keep_off_worker_pieces, 0);
        atomic_store(&keep_off_narrow_pieces, 0);
        cover_init(&c, 64, 1);
        gd_pool_for(3, c.n, 1, 0, keep_off_fn, &c);
        cover_done(&c, "keep off");
        CHECK(atomic_load(&keep_off_worker_pieces) > 0, "keep off: round %d, no worker ran a piece", round);
        CHECK(atomic_load(&keep_off_narrow_pieces) == 0, "keep off: round %d, %d of %d worker pieces ran on a narrowed mask",
              round, atomic_load(&keep_off_narrow_pieces), atomic_load(&keep_off_worker_pieces));
        sleep_us(50000); /* past the workers' spin: both asleep */
        int n = 0, kept = workers_kept_off(&n);
        CHECK(kept < 0 || (n == 2 && kept == 2), "keep off: round %d, %d of %d sleeping workers keep off CPU %d", round,
              kept, n, keep_off_cpu);
    }
    CHECK(gd_pool_test_kept_off_calls() - before >= 2, "keep off: %ld narrowed sleeps counted",
          gd_pool_test_kept_off_calls() - before);
    CHECK(sched_setaffinity(0, sizeof keep_off_full, &keep_off_full) == 0, "keep off: cannot restore the caller's mask");
    gd_pool_trim(1);
}
#else
static void test_keep_off_caller(void) { printf("(no CPU affinity here) "); }
#endif

/* ------------------------------------------------------------------------------------------
 * driver
 * ---------------------------------------------------------------------------------------- */

static const char *only;

static void run(const char *name, void (*fn)(void))
{
    if (only && strncmp(name, only, strlen(only)) != 0) return;
    printf("%-28s", name);
    fflush(stdout);
    int before = atomic_load(&failures);
    double t0 = now_s();
    alarm(600); /* a hang fails the run instead of blocking it */
    fn();
    alarm(0);
    printf("%s (%.2f s)\n", atomic_load(&failures) == before ? "ok" : "FAILED", now_s() - t0);
}

static uint64_t seed;
static void t_random(void) { test_random_loops(seed); }
static void t_concurrent(void) { test_concurrent_callers(seed); }
static void t_trim(void) { test_thread_count_changes(seed); }
static void t_load(void) { test_under_load(seed); }

int main(int argc, char **argv)
{
    self_path = argv[0];
    gd_pool_set_test_hook(test_hook);
    if (argc > 2 && strcmp(argv[1], "--child") == 0) return child_main(argv[2]);
    seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)time(NULL);
    if (seed == 0) seed = 1;
    only = argc > 2 ? argv[2] : NULL;
    printf("test_pool: seed %" PRIu64 ", %d cpus, %s\n", seed, ncpus(),
#if defined(GD_POOL_NO_FUTEX) || defined(GD_PORT_POSIX_ONLY)
           "condition variables"
#else
           "futex where available"
#endif
    );
    run("random loops", t_random);
    run("steal order", test_steal_order);
    run("late workers", test_late_workers);
    run("wake tree", test_wake_tree);
    run("back-off", test_backoff);
    run("claimed worker", test_claimed_worker);
    run("concurrent and nested", t_concurrent);
    run("thread count changes", t_trim);
    run("thread limit", test_no_threads);
    run("fork", test_fork);
    run("keep off caller's CPU", test_keep_off_caller);
    run("under load", t_load);
    run("exit", test_exit);
    int f = atomic_load(&failures);
    printf("%s: %d failure%s\n", f ? "FAILED" : "passed", f, f == 1 ? "" : "s");
    return f ? 1 : 0;
}
