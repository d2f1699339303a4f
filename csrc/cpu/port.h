/* port.h - the one place where the C core meets the operating system: threads, locks and
 * their one-time initialisation, sleeping on a 32-bit word, keeping a thread off one CPU,
 * the current CPU, the CPU count and memory size, aligned allocation and huge pages, the
 * clock, the spin-wait hint, and CPU feature detection. Everything else in csrc/core and
 * csrc/cpu is plain C11 and calls these (tests/test_port.py greps for calls that bypass it).
 *
 * Two implementations: port_posix.c (Linux, macOS, BSDs) and port_win32.c (Windows; built
 * here with mingw-w64 and run under Wine, `make check-windows`). On Linux port_posix.c uses
 * the Linux calls (futex, affinity masks, sched_getcpu, madvise); built with
 * -DGD_PORT_POSIX_ONLY it compiles none of them, as on macOS (`make check-posix`). CPU feature
 * detection, which depends on the compiler rather than the system, is port_cpu.c.
 *
 * The header includes no system header but C11's and, off Windows, <pthread.h> (and
 * compiler.h's intrinsics header where its portable branch needs one).
 */
#ifndef GD_CPU_PORT_H
#define GD_CPU_PORT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../compiler.h" /* GD_SPIN_PAUSE; relative: the pool's tests see only csrc/cpu */

#if defined(_WIN32)
#define GD_PORT_WIN32 1
#define GD_PORT_LINUX 0
#elif defined(__linux__) && !defined(GD_PORT_POSIX_ONLY)
#define GD_PORT_WIN32 0
#define GD_PORT_LINUX 1
#else
#define GD_PORT_WIN32 0
#define GD_PORT_LINUX 0
#endif

/* Whether gd_port_wait32 / gd_port_wake32 exist (Linux futex, Windows WaitOnAddress); where
 * not, callers sleep on a condition variable. */
#define GD_PORT_HAS_WAIT32 (GD_PORT_LINUX || GD_PORT_WIN32)

/* ---- the spin-wait hint: inline, it sits in spin loops (spelled in compiler.h) ---------- */
static inline void gd_port_relax(void)
{
    GD_SPIN_PAUSE();
}

/* ---- locks, condition variables, one-time initialisation -------------------------------- */
/* The system's own objects: a static one is initialised with GD_MUTEX_INIT / GD_ONCE_INIT. */
#if GD_PORT_WIN32
typedef struct gd_mutex { void *srwlock; } gd_mutex_t;  /* an SRWLOCK */
typedef struct gd_cond { void *cv; } gd_cond_t;         /* a CONDITION_VARIABLE */
typedef struct gd_once { void *init_once; } gd_once_t;  /* an INIT_ONCE */
#define GD_MUTEX_INIT {0}                               /* SRWLOCK_INIT */
#define GD_ONCE_INIT {0}                                /* INIT_ONCE_STATIC_INIT */
#else
#include <pthread.h>
typedef pthread_mutex_t gd_mutex_t;
typedef pthread_cond_t gd_cond_t;
typedef pthread_once_t gd_once_t;
#define GD_MUTEX_INIT PTHREAD_MUTEX_INITIALIZER
#define GD_ONCE_INIT PTHREAD_ONCE_INIT
#endif

void gd_mutex_lock(gd_mutex_t *m);
void gd_mutex_unlock(gd_mutex_t *m);
void gd_cond_init(gd_cond_t *c);
void gd_cond_wait(gd_cond_t *c, gd_mutex_t *m);
void gd_cond_broadcast(gd_cond_t *c);
void gd_once(gd_once_t *once, void (*fn)(void));

/* ---- threads ----------------------------------------------------------------------------- */
/* Starts fn(arg) on a detached thread with every signal blocked (signals belong to the
 * application's threads). Returns 0, or nonzero when no thread could be made. */
int gd_thread_start(void (*fn)(void *), void *arg);
/* Names the calling thread as debuggers and `top -H` show it, where the system allows. */
void gd_thread_set_name(const char *name);
/* Gives up the rest of this thread's time slice. */
void gd_thread_yield(void);
/* pthread_atfork where processes fork; nothing on Windows. */
void gd_port_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));

/* ---- sleeping on a word (GD_PORT_HAS_WAIT32 only) ----------------------------------------- */
/* Sleeps while *word == old; returns at once if it differs. Wake-ups may be spurious. */
void gd_port_wait32(atomic_uint *word, unsigned old);
/* Wakes every thread sleeping on word. */
void gd_port_wake32(atomic_uint *word);

/* ---- CPUs --------------------------------------------------------------------------------- */
/* The CPUs this process may run on (its affinity mask where the system has one), else the
 * online ones; at least 1. */
int gd_port_cpu_count(void);
/* The CPU the calling thread runs on, or -1 where the system does not say. */
int gd_port_current_cpu(void);

/* Keeping the calling thread off one CPU while it sleeps: its own mask and that mask less the
 * CPU (1024 CPUs at most; others are left alone). */
typedef struct gd_port_away {
    uint64_t mine[16], away[16];
    int narrowed;
} gd_port_away;
/* Returns 1 when the thread's mask was narrowed, 0 when left as it was (a mask of that one
 * CPU, a CPU out of range, a system without affinity masks). */
int gd_port_keep_off_cpu(gd_port_away *a, int cpu);
/* Gives the thread its mask back unless someone else changed it meanwhile. */
void gd_port_keep_off_end(const gd_port_away *a);

/* "avx512f", "avx2", "neon" or "baseline": what the CPU runs of the clones gd_simd builds. */
const char *gd_port_simd_level(void);

/* ---- memory and time ---------------------------------------------------------------------- */
/* The machine's physical memory in bytes, 0 where the system does not say. */
uint64_t gd_port_memory_bytes(void);
/* size bytes at a multiple of align (a power of two, at least sizeof(void *)); NULL when out
 * of memory. Freed with gd_port_aligned_free only (Windows' _aligned_malloc wants its own
 * free). */
void *gd_port_aligned_alloc(size_t size, size_t align);
void gd_port_aligned_free(void *p);
/* Asks for huge pages behind [p, p + size) where the system takes such a hint (Linux's
 * transparent huge pages); a hint, it may do nothing. */
void gd_port_hint_huge_pages(void *p, size_t size);
/* A monotonic clock in nanoseconds. */
int64_t gd_port_now_ns(void);

#endif /* GD_CPU_PORT_H */
