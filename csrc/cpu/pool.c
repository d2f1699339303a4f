/* pool.c - the CPU backend's worker pool (see pool.h for the rules callers follow).
 *
 * Why not a fork-join region: the end of an OpenMP parallel region (and of pthreadpool's
 * or ggml's parallelize call) is a barrier where the caller waits until every thread has
 * checked in. On a machine with other busy processes a thread is often not running when
 * the loop starts; the caller then sleeps a whole scheduler slice (4-9 ms here) for a
 * thread that had nothing left to do. Here completion is counted in pieces of work, not in
 * threads, as TBB's wait_context counts references to unfinished tasks and rayon's join
 * only waits for a job that was actually stolen: the caller waits only for pieces another
 * thread has claimed and not yet finished.
 *
 * A loop (a "job") is described in pool-owned memory, never on the caller's stack:
 * - cursor[p] is one 64-bit word per part: (generation:32, front:16, back:16). The owner
 *   of part p claims pieces at the front and other threads steal at the back, each by
 *   compare-and-swap (pthreadpool's range_start / range_end scheme, there with separate
 *   words). A finished job's cursors are used up, and a claim also needs the job's
 *   generation in the word, so a worker that wakes up after its job ended (maybe after
 *   several newer ones began) claims nothing and touches nothing; the generation also
 *   keeps a fork child's workers off cursors a parent thread's job left half used.
 * - A successful claim proves the job is still running (its piece is not finished), so
 *   only then does a worker read the descriptor (fn, ctx, sizes) and call fn.
 * - done.word counts unfinished pieces. The caller, out of pieces, polls it briefly and
 *   then sleeps on it; the thread that finishes the last piece wakes it.
 * - Each worker has its own wake word holding the generation of the last job announced
 *   to it; it polls the word for a while, then sleeps on it (pthreadpool's per-thread
 *   command word with a futex or a condition variable; ggml's threadpool polls its
 *   n_graph generation word the same way, and rayon's workers also poll, then sleep).
 *   Generations come from one counter, also used for retirements, so a value is never
 *   announced twice. Sleeping workers are woken along a tree, each woken worker waking
 *   two more (as rayon's Sleep::work_found has a thread that found work wake another),
 *   rather than the caller waking all.
 * - While a worker sleeps it keeps off the CPU its last caller ran on, so that a wake-up does
 *   not put the two on one CPU (gd_pool_keep_off_caller).
 * - One job at a time: a caller that finds the pool busy runs its loop by itself.
 */
#include "pool.h"

#include <limits.h>
#include <stdatomic.h>

#include "port.h" /* threads, locks, the clock, sleeping on a word, affinity */

#if GD_PORT_HAS_WAIT32 && !defined(GD_POOL_NO_FUTEX)
#define GD_POOL_FUTEX 1 /* a futex on Linux, WaitOnAddress on Windows */
#else
#define GD_POOL_FUTEX 0 /* macOS, BSDs, or forced for tests: condition variables */
#endif

/* ------------------------------------------------------------------------------------------
 * tuning constants
 * ---------------------------------------------------------------------------------------- */

/* How long an idle worker polls its wake word before sleeping: about as long as a slow
 * wake-up costs, and longer than the gaps between the parallel operations of a training
 * step. bench_pool wake (2-core AMD EPYC VM): a loop reaches a spinning worker in ~0.2 us.
 * A sleeping one costs the caller a futex call (~6 us) and starts after a delay that
 * depends on the machine: ~12 us at load average 4.7, where the other core never idles,
 * but 43 us (median) and 145 us (90th percentile) with nothing else running, where the
 * hypervisor has put the idle core to sleep too (1 call in 10 saw no start within 20 ms).
 * In a training step the products are 50-200 us apart (the small operations between
 * them). Timed from Python, 256x784 @ 784x10 on 2 threads after 50-200 us of other work:
 * 62-72 us with a 20 us spin (every split product woke a sleeping worker; one thread
 * takes the same), 38-40 us with a 300 us spin. On a busy machine a spinning worker that
 * loses its core stops at once (GD_POOL_PREEMPTED_NS), so the longer spin costs other
 * processes little. */
#ifndef GD_POOL_WORKER_SPIN_NS
#define GD_POOL_WORKER_SPIN_NS 300000
#endif

/* How long a caller that has run out of pieces polls for the pieces others still hold
 * before sleeping: the same bound, since sleeping costs it one wake-up by the worker that
 * finishes last, and that wake-up is as slow as the worker's. A running worker is done
 * within a piece (1-30 us at the default piece count for loops worth threading, up to a few
 * hundred for panels of a product); a descheduled one will not be for milliseconds, and the
 * caller must then leave it the CPU: a spin that sees itself descheduled ends at once. */
#ifndef GD_POOL_CALLER_SPIN_NS
#define GD_POOL_CALLER_SPIN_NS 300000
#endif

/* A gap this long between two polls of a spin loop means the spinning thread was
 * descheduled: the machine is oversubscribed, and spinning on takes CPU time from the
 * thread that would end the wait. */
#define GD_POOL_PREEMPTED_NS 200000

/* After a spinning thread found the machine oversubscribed, loops wake no sleeping worker
 * for this long (spinning workers still join). With no idle core, a woken worker mostly
 * takes the caller's: measured with a 2^22-element add at load average 6 on 2 cores,
 * waking the worker made a call 2-4x slower than the serial loop (5-10 ms against
 * 2.3-3 ms), one thread doing every piece either way. The first loop after the window
 * wakes workers again, which tests whether a core has come free. */
#define GD_POOL_BACKOFF_NS 50000000

#define GD_POOL_MAX_PIECES 0xffff /* pieces per part: 16 bits of a cursor word */
#define GD_POOL_WAKE_ROOTS 2      /* sleeping workers the caller wakes itself (see below) */

/* ------------------------------------------------------------------------------------------
 * pause, clock, sleeping on a 32-bit word (port.h)
 * ---------------------------------------------------------------------------------------- */

static inline void gd_pool_relax(void) { gd_port_relax(); }

int64_t gd_pool_now_ns(void) { return gd_port_now_ns(); }

static _Atomic int64_t gd_pool_oversubscribed_at; /* when a spin last saw it, 0: never */

#ifdef GD_POOL_TEST_HOOKS
static atomic_int gd_pool_test_backoff; /* off unless a test turns it on */
static atomic_long gd_pool_test_wakes;
static atomic_long gd_pool_test_kept_off;
static atomic_int gd_pool_test_threads; /* spawned and not yet exited */
long gd_pool_test_kept_off_calls(void) { return atomic_load(&gd_pool_test_kept_off); }
int gd_pool_test_live_threads(void) { return atomic_load(&gd_pool_test_threads); }
void gd_pool_test_set_backoff(int on)
{
    atomic_store(&gd_pool_test_backoff, on);
    atomic_store(&gd_pool_oversubscribed_at, 0);
}
/* as if seen an hour from now: the window lasts until the back-off is set again */
void gd_pool_test_mark_oversubscribed(void) { atomic_store(&gd_pool_oversubscribed_at, gd_pool_now_ns() + 3600000000000); }
long gd_pool_test_wake_calls(void) { return atomic_load(&gd_pool_test_wakes); }
#define GD_POOL_TEST_COUNT(counter, delta) atomic_fetch_add(&(counter), (delta))
#else
#define GD_POOL_TEST_COUNT(counter, delta) ((void)0)
#endif

/* Polls cheaply, reading the clock every 64 polls; false once `deadline` has passed or the
 * thread was clearly descheduled between two clock reads. */
typedef struct gd_pool_spin {
    int64_t deadline, last;
    unsigned polls;
} gd_pool_spin;

static gd_pool_spin gd_pool_spin_start(int64_t ns)
{
    int64_t now = gd_pool_now_ns();
    return (gd_pool_spin){now + ns, now, 0};
}

static int gd_pool_spin_more(gd_pool_spin *s)
{
    gd_pool_relax();
    if ((++s->polls & 63) != 0) return 1;
    int64_t now = gd_pool_now_ns(), gap = now - s->last;
    s->last = now;
    if (gap >= GD_POOL_PREEMPTED_NS) {
        atomic_store_explicit(&gd_pool_oversubscribed_at, now, memory_order_relaxed);
        return 0;
    }
    return now < s->deadline;
}

/* Whether a loop may wake sleeping workers (see GD_POOL_BACKOFF_NS). */
static int gd_pool_may_wake(void)
{
#ifdef GD_POOL_TEST_HOOKS
    if (!atomic_load(&gd_pool_test_backoff)) return 1;
#endif
    const int64_t t = atomic_load_explicit(&gd_pool_oversubscribed_at, memory_order_relaxed);
    return t == 0 || gd_pool_now_ns() - t > GD_POOL_BACKOFF_NS;
}

/* A 32-bit word threads can sleep on until it changes (futex on Linux, WaitOnAddress on
 * Windows; elsewhere a
 * condition variable per word under one shared mutex, taken only to sleep or wake).
 * `sleepers` lets the thread that changes the word skip the wake-up call when nobody
 * sleeps: both sides use sequentially consistent operations, so either the sleeper sees
 * the new value or the waker sees the sleeper. */
typedef struct gd_pool_event {
    atomic_uint word;
    atomic_int sleepers;
#if !GD_POOL_FUTEX
    gd_cond_t cond;
#endif
} gd_pool_event;

#if !GD_POOL_FUTEX
static gd_mutex_t gd_pool_park_lock = GD_MUTEX_INIT;
#endif

/* Sleeps once unless the word no longer holds `old`; wake-ups may be spurious, callers
 * loop. */
static void gd_pool_park(gd_pool_event *ev, unsigned old)
{
    atomic_fetch_add(&ev->sleepers, 1);
#if GD_POOL_FUTEX
    gd_port_wait32(&ev->word, old);
#else
    gd_mutex_lock(&gd_pool_park_lock);
    if (atomic_load(&ev->word) == old) gd_cond_wait(&ev->cond, &gd_pool_park_lock);
    gd_mutex_unlock(&gd_pool_park_lock);
#endif
    atomic_fetch_sub(&ev->sleepers, 1);
}

/* Call after changing ev->word (with a sequentially consistent store or RMW). */
static void gd_pool_unpark(gd_pool_event *ev)
{
    if (atomic_load(&ev->sleepers) == 0) return;
#if GD_POOL_FUTEX
    gd_port_wake32(&ev->word);
#else
    gd_mutex_lock(&gd_pool_park_lock);
    gd_cond_broadcast(&ev->cond);
    gd_mutex_unlock(&gd_pool_park_lock);
#endif
}

/* Wakes a worker that was announced a job, if it sleeps and the machine has a core for it.
 * A wake-up call that takes longer than GD_POOL_PREEMPTED_NS means the woken thread took
 * this one's core: the machine is oversubscribed too. */
static void gd_pool_wake_worker(gd_pool_event *ev)
{
    if (atomic_load(&ev->sleepers) == 0 || !gd_pool_may_wake()) return;
    GD_POOL_TEST_COUNT(gd_pool_test_wakes, 1);
    const int64_t t0 = gd_pool_now_ns();
    gd_pool_unpark(ev);
    const int64_t t1 = gd_pool_now_ns();
    if (t1 - t0 >= GD_POOL_PREEMPTED_NS) atomic_store_explicit(&gd_pool_oversubscribed_at, t1, memory_order_relaxed);
}

/* ------------------------------------------------------------------------------------------
 * pool state
 * ---------------------------------------------------------------------------------------- */

#define GD_POOL_MAX_WORKERS (GD_POOL_MAX_THREADS - 1)
#define GD_POOL_SLOT_BITS 7 /* worker index in a thread's start argument */
_Static_assert(GD_POOL_MAX_WORKERS < (1 << GD_POOL_SLOT_BITS), "slot index fits its bits");

typedef struct gd_pool_slot {
    _Alignas(64) gd_pool_event wake; /* word: generation of the last job announced here */
    atomic_uint incarnation;         /* bumped when the slot's thread is created or retired */
    atomic_uint start_seen;          /* wake.word when the current thread was created */
} gd_pool_slot;

typedef struct gd_pool_cursor {
    _Alignas(64) _Atomic uint64_t word; /* generation:32 | front:16 | back:16 */
} gd_pool_cursor;

static struct {
    /* claimed by the caller whose job runs; it alone writes the job fields below */
    _Alignas(64) atomic_int busy;
    gd_pool_fn fn;
    void *ctx;
    int64_t n, part_len, piece_len;
    atomic_int nparts;       /* parts of the running job: a hint for workers */
    atomic_int caller_cpu;   /* the CPU its caller announced it from, -1: unknown */
    atomic_uint generations; /* last value handed out for a job or a retirement */

    _Alignas(64) gd_pool_event done; /* word: pieces of the running job not finished */
    gd_pool_cursor cursor[GD_POOL_MAX_THREADS];
    gd_pool_slot slot[GD_POOL_MAX_WORKERS];

    gd_mutex_t lock; /* guards creating and retiring workers, and the two fields below */
    atomic_int nworkers;  /* workers live in slots [0, nworkers) */
    int spawn_limit;      /* after a thread failed to start, no retries beyond this count */
} gd_pool = {.lock = GD_MUTEX_INIT, .spawn_limit = GD_POOL_MAX_WORKERS};

#ifdef GD_POOL_TEST_HOOKS
static _Atomic(gd_pool_hook_fn) gd_pool_test_hook;
void gd_pool_set_test_hook(gd_pool_hook_fn hook) { atomic_store(&gd_pool_test_hook, hook); }
#define GD_POOL_HOOK(where, thread)                                    \
    do {                                                               \
        gd_pool_hook_fn hook_ = atomic_load(&gd_pool_test_hook);       \
        if (hook_) hook_(where, thread);                               \
    } while (0)
#else
#define GD_POOL_HOOK(where, thread) ((void)0)
#endif

static unsigned gd_pool_next_generation(void)
{
    unsigned g = atomic_fetch_add_explicit(&gd_pool.generations, 1, memory_order_relaxed) + 1;
    return g ? g : gd_pool_next_generation(); /* 0 marks never-used cursors */
}

/* ------------------------------------------------------------------------------------------
 * claiming and running pieces
 * ---------------------------------------------------------------------------------------- */

static uint64_t gd_pool_cursor_word(unsigned gen, unsigned front, unsigned back)
{
    return (uint64_t)gen << 32 | (uint64_t)front << 16 | back;
}

/* Index of a piece of part p claimed for job `gen` (from the front or the back), or -1
 * when the part is used up or belongs to another job. Acquire: the claim then sees the
 * job's descriptor, published before the cursor was. */
static int gd_pool_claim(int p, unsigned gen, int from_back)
{
    _Atomic uint64_t *c = &gd_pool.cursor[p].word;
    uint64_t w = atomic_load_explicit(c, memory_order_relaxed);
    for (;;) {
        const unsigned front = (unsigned)(w >> 16) & 0xffff, back = (unsigned)w & 0xffff;
        if ((unsigned)(w >> 32) != gen || front >= back) return -1;
        const uint64_t next = from_back ? w - 1 : w + (1u << 16);
        if (atomic_compare_exchange_weak_explicit(c, &w, next, memory_order_acquire, memory_order_relaxed))
            return (int)(from_back ? back - 1 : front);
    }
}

static void gd_pool_run_piece(int p, int idx)
{
    const int64_t part_begin = (int64_t)p * gd_pool.part_len;
    const int64_t part_end = gd_pool.n - part_begin < gd_pool.part_len ? gd_pool.n : part_begin + gd_pool.part_len;
    const int64_t begin = part_begin + (int64_t)idx * gd_pool.piece_len;
    gd_pool.fn(gd_pool.ctx, begin, part_end - begin < gd_pool.piece_len ? part_end : begin + gd_pool.piece_len);
}

/* Thread `me` (0 = the caller) runs pieces of job `gen`: its own part from the front,
 * then the other parts from the back. Workers report each piece at once, so nothing
 * waits on a worker between two of its pieces; the caller reports its count at the end.
 * Returns the pieces run by a caller. */
static unsigned gd_pool_work(unsigned gen, int me, int nparts)
{
    unsigned ran = 0;
    for (int k = 0; k < nparts; k++) {
        const int p = (me + k) % nparts;
        int idx;
        while ((idx = gd_pool_claim(p, gen, p != me)) >= 0) {
            if (me) GD_POOL_HOOK(GD_POOL_HOOK_CLAIMED, me);
            gd_pool_run_piece(p, idx);
            if (!me) {
                ran++;
            } else if (atomic_fetch_sub(&gd_pool.done.word, 1) == 1) {
                gd_pool_unpark(&gd_pool.done); /* pool memory: safe even if the job has ended */
            }
        }
    }
    return ran;
}

/* ------------------------------------------------------------------------------------------
 * workers: lifetime, sleep, fork
 * ---------------------------------------------------------------------------------------- */

/* Sleeping workers are woken along a tree so that the caller makes at most
 * GD_POOL_WAKE_ROOTS wake-up calls (each a system call of a few microseconds) before it
 * starts on its own part: worker i, once awake for job `gen`, wakes workers
 * GD_POOL_WAKE_ROOTS * (i + 1) + j (j < GD_POOL_WAKE_ROOTS) that were announced the same
 * job. A spinning worker needs no call at all. */
static void gd_pool_wake_children(int i, unsigned gen)
{
    const int nworkers = atomic_load_explicit(&gd_pool.nworkers, memory_order_relaxed);
    for (int j = 0; j < GD_POOL_WAKE_ROOTS; j++) {
        const int c = GD_POOL_WAKE_ROOTS * (i + 1) + j;
        if (c >= nworkers) return;
        gd_pool_event *ev = &gd_pool.slot[c].wake;
        if (atomic_load(&ev->word) == gen) gd_pool_wake_worker(ev);
    }
}

/* A sleeping worker keeps off the CPU of the caller that last announced a job: while it sleeps
 * its affinity is its own mask less that CPU, and it gets its mask back as soon as it wakes,
 * so that the scheduler is free to move it wherever it runs. Why: a worker woken on its
 * caller's CPU gains the job nothing, and it costs the loops that follow their parallelism:
 * each thread's spin sees the other take the CPU, the pool backs off (GD_POOL_BACKOFF_NS), and
 * the caller runs every piece itself. Seen on a 2-core VM with nothing else running: after
 * idle pauses of 0.25 s the kernel woke the worker on the caller's CPU while the other CPU
 * idled, and kept doing so. Rounds of 50 products of 256x784 @ 784x10 on 2 threads, each after
 * such a pause, then took 82-106 us per product (median) in 6 to 8 rounds of 10, what one
 * thread takes (78-89 us); with the sleeping worker kept off that CPU, 43-56 us in 39 of 40
 * rounds (one took 91 us). A caller that has moved since makes the worker keep off the wrong
 * CPU for one job. A mask of that one CPU, or one changed by someone else while the worker
 * slept, is left as it is. */
static void gd_pool_keep_off_caller(gd_port_away *a)
{
    const int caller = atomic_load_explicit(&gd_pool.caller_cpu, memory_order_relaxed);
    if (gd_port_keep_off_cpu(a, caller)) GD_POOL_TEST_COUNT(gd_pool_test_kept_off, 1);
}

/* Waits until the slot's wake word differs from `seen` (a job, or a retirement). */
static unsigned gd_pool_await_job(gd_pool_slot *s, unsigned seen)
{
    unsigned g;
    gd_pool_spin spin = gd_pool_spin_start(GD_POOL_WORKER_SPIN_NS);
    while ((g = atomic_load_explicit(&s->wake.word, memory_order_acquire)) == seen && gd_pool_spin_more(&spin)) {
    }
    if (g != seen) return g;
    gd_port_away away;
    gd_pool_keep_off_caller(&away);
    while (g == seen) {
        gd_pool_park(&s->wake, seen);
        g = atomic_load_explicit(&s->wake.word, memory_order_acquire);
    }
    gd_port_keep_off_end(&away);
    return g;
}

static void gd_pool_worker_main(void *arg)
{
    const uintptr_t a = (uintptr_t)arg;
    const int i = (int)(a & ((1u << GD_POOL_SLOT_BITS) - 1));
    const unsigned inc = (unsigned)(a >> GD_POOL_SLOT_BITS);
    gd_pool_slot *s = &gd_pool.slot[i];
    unsigned seen = atomic_load(&s->start_seen);
    gd_thread_set_name("gpudev-pool"); /* as top -H and debuggers show it */
    /* A retirement bumps the incarnation and then changes the wake word, so a thread
     * whose incarnation no longer matches leaves without touching a job. */
    while (atomic_load(&s->incarnation) == inc) {
        const unsigned gen = gd_pool_await_job(s, seen);
        if (atomic_load(&s->incarnation) != inc) break;
        seen = gen;
        gd_pool_wake_children(i, gen);
        GD_POOL_HOOK(GD_POOL_HOOK_WOKEN, i + 1);
        int nparts = atomic_load_explicit(&gd_pool.nparts, memory_order_relaxed);
        gd_pool_work(gen, i + 1, nparts < 1 ? 1 : nparts > GD_POOL_MAX_THREADS ? GD_POOL_MAX_THREADS : nparts);
    }
    GD_POOL_TEST_COUNT(gd_pool_test_threads, -1);
}

/* Starts the thread of slot i, detached and with every signal blocked (signals belong to
 * the application's threads). Called with gd_pool.lock held. */
static int gd_pool_spawn(int i)
{
    gd_pool_slot *s = &gd_pool.slot[i];
    const unsigned inc = (atomic_fetch_add(&s->incarnation, 1) + 1) & (UINT_MAX >> GD_POOL_SLOT_BITS);
    atomic_store(&s->incarnation, inc);
    atomic_store(&s->start_seen, atomic_load(&s->wake.word));
    GD_POOL_TEST_COUNT(gd_pool_test_threads, 1);
    const int rc = gd_thread_start(gd_pool_worker_main, (void *)((uintptr_t)inc << GD_POOL_SLOT_BITS | (uintptr_t)i));
    if (rc != 0) GD_POOL_TEST_COUNT(gd_pool_test_threads, -1);
    return rc;
}

/* Tells the thread of slot i to exit once it holds no piece; nobody waits for it. Called
 * with gd_pool.lock held. */
static void gd_pool_retire(int i)
{
    gd_pool_slot *s = &gd_pool.slot[i];
    atomic_fetch_add(&s->incarnation, 1);
    atomic_store(&s->wake.word, gd_pool_next_generation());
    gd_pool_unpark(&s->wake);
}

#if !GD_POOL_FUTEX
static gd_pool_event *gd_pool_event_at(int i) { return i == 0 ? &gd_pool.done : &gd_pool.slot[i - 1].wake; }
#define GD_POOL_EVENTS (GD_POOL_MAX_WORKERS + 1)
#endif

/* fork() copies only the calling thread: the child's pool has no workers and maybe a job
 * that another parent thread was running. Locks are held across fork so none is copied
 * in the locked state; condition variables are created afresh in the child, since the
 * parent's copies may still count waiters that do not exist there (glibc's broadcast then
 * waits for them forever). */
static void gd_pool_before_fork(void)
{
    gd_mutex_lock(&gd_pool.lock);
#if !GD_POOL_FUTEX
    gd_mutex_lock(&gd_pool_park_lock);
#endif
}

static void gd_pool_after_fork_parent(void)
{
#if !GD_POOL_FUTEX
    gd_mutex_unlock(&gd_pool_park_lock);
#endif
    gd_mutex_unlock(&gd_pool.lock);
}

static void gd_pool_after_fork_child(void)
{
    for (int i = 0; i < GD_POOL_MAX_WORKERS; i++) {
        atomic_fetch_add(&gd_pool.slot[i].incarnation, 1);
        atomic_store(&gd_pool.slot[i].wake.sleepers, 0);
    }
    atomic_store(&gd_pool.done.sleepers, 0);
    atomic_store(&gd_pool.nworkers, 0);
    gd_pool.spawn_limit = GD_POOL_MAX_WORKERS;
    atomic_store(&gd_pool.busy, 0);
#ifdef GD_POOL_TEST_HOOKS
    atomic_store(&gd_pool_test_threads, 0); /* the parent's workers were not copied */
#endif
#if !GD_POOL_FUTEX
    for (int i = 0; i < GD_POOL_EVENTS; i++) gd_cond_init(&gd_pool_event_at(i)->cond);
#endif
    gd_pool_after_fork_parent();
}

static gd_once_t gd_pool_once = GD_ONCE_INIT;

static void gd_pool_init(void)
{
#if !GD_POOL_FUTEX
    for (int i = 0; i < GD_POOL_EVENTS; i++) gd_cond_init(&gd_pool_event_at(i)->cond);
#endif
    gd_port_atfork(gd_pool_before_fork, gd_pool_after_fork_parent, gd_pool_after_fork_child);
}

/* Workers available for a job that wants `want` of them (fewer if threads cannot be
 * created). Called by the job's caller. */
static int gd_pool_grow(int want)
{
    int have = atomic_load_explicit(&gd_pool.nworkers, memory_order_acquire);
    if (have >= want) return want;
    gd_once(&gd_pool_once, gd_pool_init);
    gd_mutex_lock(&gd_pool.lock);
    have = atomic_load(&gd_pool.nworkers);
    while (have < want && have < gd_pool.spawn_limit) {
        if (gd_pool_spawn(have) != 0) {
            gd_pool.spawn_limit = have; /* e.g. a process thread limit: run with fewer */
            break;
        }
        have++;
    }
    atomic_store_explicit(&gd_pool.nworkers, have, memory_order_release);
    gd_mutex_unlock(&gd_pool.lock);
    return have < want ? have : want;
}

void gd_pool_trim(int nt)
{
    const int keep = nt < 1 ? 0 : nt > GD_POOL_MAX_THREADS ? GD_POOL_MAX_WORKERS : nt - 1;
    gd_once(&gd_pool_once, gd_pool_init);
    gd_mutex_lock(&gd_pool.lock);
    const int have = atomic_load(&gd_pool.nworkers);
    for (int i = keep; i < have; i++) gd_pool_retire(i);
    if (keep < have) atomic_store(&gd_pool.nworkers, keep);
    gd_pool.spawn_limit = GD_POOL_MAX_WORKERS; /* a new count: worth trying again */
    gd_mutex_unlock(&gd_pool.lock);
}

int gd_pool_workers(void) { return atomic_load(&gd_pool.nworkers); }

/* ------------------------------------------------------------------------------------------
 * running a job
 * ---------------------------------------------------------------------------------------- */

/* The CPU this thread runs on, -1 where the system does not say. */
static int gd_pool_current_cpu(void) { return gd_port_current_cpu(); }

/* Publishes the job (descriptor, piece count, then cursors with release order) and
 * announces it to `nw` workers. Returns its generation. */
static unsigned gd_pool_publish(int nparts, int nw, int64_t n, int64_t part_len, int64_t piece_len, gd_pool_fn fn,
                                void *ctx)
{
    const unsigned gen = gd_pool_next_generation();
    gd_pool.fn = fn;
    gd_pool.ctx = ctx;
    gd_pool.n = n;
    gd_pool.part_len = part_len;
    gd_pool.piece_len = piece_len;
    unsigned count[GD_POOL_MAX_THREADS], total = 0;
    for (int p = 0; p < nparts; p++) {
        const int64_t left = n - (int64_t)p * part_len, len = left < part_len ? left : part_len;
        count[p] = len > 0 ? (unsigned)((len + piece_len - 1) / piece_len) : 0;
        total += count[p];
    }
    atomic_store_explicit(&gd_pool.done.word, total, memory_order_relaxed);
    for (int p = 0; p < nparts; p++)
        atomic_store_explicit(&gd_pool.cursor[p].word, gd_pool_cursor_word(gen, 0, count[p]), memory_order_release);
    atomic_store_explicit(&gd_pool.nparts, nparts, memory_order_relaxed);
    atomic_store_explicit(&gd_pool.caller_cpu, gd_pool_current_cpu(), memory_order_relaxed);
    for (int i = 0; i < nw; i++) atomic_store(&gd_pool.slot[i].wake.word, gen);
    for (int i = 0; i < nw && i < GD_POOL_WAKE_ROOTS; i++) gd_pool_wake_worker(&gd_pool.slot[i].wake);
    return gen;
}

/* Waits for the pieces other threads still hold: briefly polling, then asleep so that a
 * descheduled worker gets the CPU back. */
static void gd_pool_wait_done(void)
{
    unsigned r;
    gd_pool_spin spin = gd_pool_spin_start(GD_POOL_CALLER_SPIN_NS);
    while ((r = atomic_load_explicit(&gd_pool.done.word, memory_order_acquire)) != 0 && gd_pool_spin_more(&spin)) {
    }
    while (r != 0) {
        gd_pool_park(&gd_pool.done, r);
        r = atomic_load_explicit(&gd_pool.done.word, memory_order_acquire);
    }
}

/* fn over [0, n) cut into nparts parts of part_len items and pieces of piece_len items,
 * on up to `threads` threads. */
static void gd_pool_run(int threads, int nparts, int64_t n, int64_t part_len, int64_t piece_len, gd_pool_fn fn,
                        void *ctx)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&gd_pool.busy, &expected, 1, memory_order_acquire,
                                                 memory_order_relaxed)) {
        fn(ctx, 0, n); /* another caller's job, or this thread's own from inside fn */
        return;
    }
    const int nw = gd_pool_grow(threads - 1);
    if (nw == 0) {
        fn(ctx, 0, n);
    } else {
        const unsigned gen = gd_pool_publish(nparts, nw, n, part_len, piece_len, fn, ctx);
        const unsigned mine = gd_pool_work(gen, 0, nparts);
        if (atomic_fetch_sub(&gd_pool.done.word, mine) != mine) gd_pool_wait_done();
    }
    atomic_store_explicit(&gd_pool.busy, 0, memory_order_release);
}

static int64_t gd_pool_round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

void gd_pool_for(int nt, int64_t n, int64_t align, int pieces, gd_pool_fn fn, void *ctx)
{
    if (n <= 0) return;
    if (align < 1) align = 1;
    if (nt <= 1 || n <= align) {
        fn(ctx, 0, n);
        return;
    }
    if (nt > GD_POOL_MAX_THREADS) nt = GD_POOL_MAX_THREADS;
    if (pieces < 1) pieces = GD_POOL_PIECES;
    if (pieces > GD_POOL_MAX_PIECES) pieces = GD_POOL_MAX_PIECES;
    const int64_t part = gd_pool_round_up((n + nt - 1) / nt, align);
    const int64_t piece = gd_pool_round_up((part + pieces - 1) / pieces, align);
    const int nparts = (int)((n + part - 1) / part);
    if (nparts <= 1) {
        fn(ctx, 0, n);
        return;
    }
    gd_pool_run(nparts, nparts, n, part, piece, fn, ctx);
}

void gd_pool_for_dynamic(int nt, int64_t n, int64_t grain, gd_pool_fn fn, void *ctx)
{
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (nt <= 1 || n <= grain) {
        fn(ctx, 0, n);
        return;
    }
    if (n / grain >= GD_POOL_MAX_PIECES) grain = (n + GD_POOL_MAX_PIECES - 1) / GD_POOL_MAX_PIECES;
    const int64_t chunks = (n + grain - 1) / grain;
    if (nt > GD_POOL_MAX_THREADS) nt = GD_POOL_MAX_THREADS;
    gd_pool_run(chunks < nt ? (int)chunks : nt, 1, n, n, grain, fn, ctx);
}
