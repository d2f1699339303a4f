/* port_posix.c - port.h on POSIX systems (Linux, macOS, BSDs). The Linux-only calls (futex,
 * affinity masks, sched_getcpu, pthread_setname_np, madvise's huge pages) sit behind
 * GD_PORT_LINUX, which -DGD_PORT_POSIX_ONLY turns off on Linux to build what macOS builds.
 */
#ifndef _WIN32

#define _GNU_SOURCE /* syscall, sched_getaffinity, CPU_COUNT, pthread_setname_np, MADV_HUGEPAGE */

#include "port.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if GD_PORT_LINUX
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

void gd_mutex_lock(gd_mutex_t *m) { pthread_mutex_lock(m); }
void gd_mutex_unlock(gd_mutex_t *m) { pthread_mutex_unlock(m); }
void gd_cond_init(gd_cond_t *c) { pthread_cond_init(c, NULL); }
void gd_cond_wait(gd_cond_t *c, gd_mutex_t *m) { pthread_cond_wait(c, m); }
void gd_cond_broadcast(gd_cond_t *c) { pthread_cond_broadcast(c); }
void gd_once(gd_once_t *once, void (*fn)(void)) { pthread_once(once, fn); }

/* ---- threads ------------------------------------------------------------------------------ */

typedef struct gd_thread_start_arg {
    void (*fn)(void *);
    void *arg;
} gd_thread_start_arg;

static void *gd_thread_main(void *p)
{
    gd_thread_start_arg a = *(gd_thread_start_arg *)p;
    free(p);
    a.fn(a.arg);
    return NULL;
}

int gd_thread_start(void (*fn)(void *), void *arg)
{
    gd_thread_start_arg *a = malloc(sizeof *a);
    if (a == NULL) return -1;
    a->fn = fn;
    a->arg = arg;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the new thread inherits the blocked mask */
    pthread_attr_t attr;
    pthread_t t;
    int rc = pthread_attr_init(&attr);
    if (rc == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        rc = pthread_create(&t, &attr, gd_thread_main, a);
        pthread_attr_destroy(&attr);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) free(a);
    return rc;
}

void gd_thread_set_name(const char *name)
{
#if GD_PORT_LINUX
    pthread_setname_np(pthread_self(), name);
#else
    (void)name; /* macOS's pthread_setname_np takes only the name; unnamed there */
#endif
}

void gd_thread_yield(void) { sched_yield(); }

void gd_port_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    pthread_atfork(prepare, parent, child);
}

/* ---- sleeping on a word ------------------------------------------------------------------- */

#if GD_PORT_LINUX
_Static_assert(sizeof(atomic_uint) == 4, "futex words are 32 bits");

void gd_port_wait32(atomic_uint *word, unsigned old)
{
    if (atomic_load(word) == old) syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, old, NULL, NULL, 0);
}

void gd_port_wake32(atomic_uint *word) { syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0); }
#endif

/* ---- CPUs --------------------------------------------------------------------------------- */

int gd_port_cpu_count(void)
{
#if GD_PORT_LINUX
    cpu_set_t set; /* a container or `taskset` may allow fewer CPUs than the machine has */
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (n < INT_MAX ? (int)n : INT_MAX) : 1;
}

int gd_port_current_cpu(void)
{
#if GD_PORT_LINUX
    return sched_getcpu(); /* a vDSO or rseq read: tens of nanoseconds */
#else
    return -1;
#endif
}

#if GD_PORT_LINUX
_Static_assert(sizeof(cpu_set_t) <= sizeof(((gd_port_away *)0)->mine), "a cpu_set_t fits gd_port_away");
#endif

int gd_port_keep_off_cpu(gd_port_away *a, int cpu)
{
    a->narrowed = 0;
#if GD_PORT_LINUX
    cpu_set_t mine, away;
    if (cpu < 0 || cpu >= CPU_SETSIZE) return 0;
    if (sched_getaffinity(0, sizeof mine, &mine) != 0) return 0; /* e.g. more CPUs than a cpu_set_t */
    away = mine;
    CPU_CLR(cpu, &away);
    if (CPU_COUNT(&away) == 0 || CPU_EQUAL(&away, &mine)) return 0;
    a->narrowed = sched_setaffinity(0, sizeof away, &away) == 0;
    memcpy(a->mine, &mine, sizeof mine);
    memcpy(a->away, &away, sizeof away);
#else
    (void)cpu; /* macOS has no affinity masks, only hints */
#endif
    return a->narrowed;
}

void gd_port_keep_off_end(const gd_port_away *a)
{
#if GD_PORT_LINUX
    cpu_set_t now, mine, away;
    if (!a->narrowed) return;
    memcpy(&mine, a->mine, sizeof mine);
    memcpy(&away, a->away, sizeof away);
    if (sched_getaffinity(0, sizeof now, &now) == 0 && CPU_EQUAL(&now, &away)) sched_setaffinity(0, sizeof mine, &mine);
#else
    (void)a;
#endif
}

/* ---- memory and time ---------------------------------------------------------------------- */

uint64_t gd_port_memory_bytes(void)
{
#if defined(_SC_PHYS_PAGES) /* Linux, macOS, the BSDs; not in POSIX itself */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) return (uint64_t)pages * (uint64_t)page;
#endif
    return 0;
}

void *gd_port_aligned_alloc(size_t size, size_t align)
{
    void *p;
    return posix_memalign(&p, align, size) == 0 ? p : NULL;
}

void gd_port_aligned_free(void *p) { free(p); }

void gd_port_hint_huge_pages(void *p, size_t size)
{
#if GD_PORT_LINUX && defined(MADV_HUGEPAGE)
    const long pagesize = sysconf(_SC_PAGESIZE);
    if (pagesize <= 0) return;
    const uintptr_t page = (uintptr_t)pagesize;
    const uintptr_t start = ((uintptr_t)p + page - 1) & ~(page - 1); /* madvise wants a page start */
    if ((uintptr_t)p + size > start) (void)madvise((void *)start, (uintptr_t)p + size - start, MADV_HUGEPAGE);
#else
    (void)p;
    (void)size;
#endif
}

int64_t gd_port_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#else
/* ISO C wants every file to declare something, even where this one compiles to nothing. */
typedef int gd_port_posix_elsewhere;
#endif /* !_WIN32 */
