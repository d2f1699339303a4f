/* port_win32.c - port.h on Windows (Vista's SRW locks, condition variables and one-time
 * initialisation; Windows 8's WaitOnAddress, from synchronization.lib). Checked by the
 * mingw-w64 cross-build and under Wine (`make check-windows`), not with MSVC.
 */
#ifdef _WIN32

#ifndef _WIN32_WINNT
#define _WIN32_WINNT 0x0602 /* Windows 8: WaitOnAddress */
#endif
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "port.h"

#if GD_MINGW
#include <float.h> /* _fpreset */
#endif

_Static_assert(sizeof(gd_mutex_t) == sizeof(SRWLOCK), "gd_mutex_t holds an SRWLOCK");
_Static_assert(sizeof(gd_cond_t) == sizeof(CONDITION_VARIABLE), "gd_cond_t holds a CONDITION_VARIABLE");
_Static_assert(sizeof(gd_once_t) == sizeof(INIT_ONCE), "gd_once_t holds an INIT_ONCE");

void gd_mutex_lock(gd_mutex_t *m) { AcquireSRWLockExclusive((PSRWLOCK)m); }
void gd_mutex_unlock(gd_mutex_t *m) { ReleaseSRWLockExclusive((PSRWLOCK)m); }
void gd_cond_init(gd_cond_t *c) { InitializeConditionVariable((PCONDITION_VARIABLE)c); }
void gd_cond_wait(gd_cond_t *c, gd_mutex_t *m) { SleepConditionVariableSRW((PCONDITION_VARIABLE)c, (PSRWLOCK)m, INFINITE, 0); }
void gd_cond_broadcast(gd_cond_t *c) { WakeAllConditionVariable((PCONDITION_VARIABLE)c); }

static BOOL CALLBACK gd_once_call(PINIT_ONCE once, PVOID fn, PVOID *context)
{
    (void)once;
    (void)context;
    void (*f)(void);
    memcpy(&f, &fn, sizeof f); /* a function pointer carried as data, without a cast between them */
    f();
    return TRUE;
}

void gd_once(gd_once_t *once, void (*fn)(void))
{
    PVOID p;
    memcpy(&p, &fn, sizeof p);
    InitOnceExecuteOnce((PINIT_ONCE)once, gd_once_call, p, NULL);
}

/* ---- threads ------------------------------------------------------------------------------ */

typedef struct gd_thread_start_arg {
    void (*fn)(void *);
    void *arg;
} gd_thread_start_arg;

static DWORD WINAPI gd_thread_main(LPVOID p)
{
    gd_thread_start_arg a = *(gd_thread_start_arg *)p;
    free(p);
#if GD_MINGW
    /* mingw-w64's pow, sqrt and other functions run on the x87 and count on the 64-bit
     * precision its startup code sets in the main thread (_fpreset); a thread CreateThread
     * starts has Windows' 53 bits, where float64 pow errs by up to 43 ulps. */
    _fpreset();
#endif
    a.fn(a.arg);
    return 0;
}

/* Windows delivers no POSIX signals to threads: nothing to block. */
int gd_thread_start(void (*fn)(void *), void *arg)
{
    gd_thread_start_arg *a = malloc(sizeof *a);
    if (a == NULL) return -1;
    a->fn = fn;
    a->arg = arg;
    HANDLE t = CreateThread(NULL, 0, gd_thread_main, a, 0, NULL);
    if (t == NULL) {
        free(a);
        return -1;
    }
    CloseHandle(t); /* detached: nobody joins it */
    return 0;
}

/* SetThreadDescription exists from Windows 10 1607 on only: threads stay unnamed. */
void gd_thread_set_name(const char *name) { (void)name; }

void gd_thread_yield(void) { SwitchToThread(); }

/* No fork() on Windows. */
void gd_port_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    (void)prepare;
    (void)parent;
    (void)child;
}

/* ---- sleeping on a word ------------------------------------------------------------------- */

void gd_port_wait32(atomic_uint *word, unsigned old)
{
    if (atomic_load(word) == old) WaitOnAddress((volatile VOID *)word, &old, sizeof old, INFINITE);
}

void gd_port_wake32(atomic_uint *word) { WakeByAddressAll((PVOID)word); }

/* ---- CPUs --------------------------------------------------------------------------------- */

int gd_port_cpu_count(void)
{
    DWORD_PTR process, system;
    if (GetProcessAffinityMask(GetCurrentProcess(), &process, &system) && process != 0) {
        int n = 0;
        for (; process; process &= process - 1) n++;
        return n;
    }
    DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    return n > 0 ? (int)n : 1;
}

int gd_port_current_cpu(void) { return (int)GetCurrentProcessorNumber(); }

/* One processor group (64 CPUs) only: a CPU past it is left alone. */
int gd_port_keep_off_cpu(gd_port_away *a, int cpu)
{
    a->narrowed = 0;
    DWORD_PTR process, system;
    if (cpu < 0 || cpu >= (int)(8 * sizeof(DWORD_PTR))) return 0;
    if (!GetProcessAffinityMask(GetCurrentProcess(), &process, &system)) return 0;
    const DWORD_PTR away = process & ~((DWORD_PTR)1 << cpu);
    if (away == 0 || away == process) return 0;
    const DWORD_PTR mine = SetThreadAffinityMask(GetCurrentThread(), away);
    if (mine == 0) return 0;
    a->mine[0] = (uint64_t)mine;
    a->away[0] = (uint64_t)away;
    a->narrowed = 1;
    return 1;
}

void gd_port_keep_off_end(const gd_port_away *a)
{
    if (!a->narrowed) return;
    /* Windows reads a thread's mask only by setting it: put ours back, and if someone else's
     * was there instead of the narrowed one, theirs again. */
    const DWORD_PTR now = SetThreadAffinityMask(GetCurrentThread(), (DWORD_PTR)a->mine[0]);
    if (now != 0 && now != (DWORD_PTR)a->away[0]) SetThreadAffinityMask(GetCurrentThread(), now);
}

/* ---- memory and time ---------------------------------------------------------------------- */

uint64_t gd_port_memory_bytes(void)
{
    MEMORYSTATUSEX m;
    m.dwLength = sizeof m;
    return GlobalMemoryStatusEx(&m) ? (uint64_t)m.ullTotalPhys : 0;
}

void *gd_port_aligned_alloc(size_t size, size_t align) { return _aligned_malloc(size ? size : 1, align); }

void gd_port_aligned_free(void *p) { _aligned_free(p); }

/* Large pages on Windows need a privilege users lack (SeLockMemoryPrivilege): no hint. */
void gd_port_hint_huge_pages(void *p, size_t size)
{
    (void)p;
    (void)size;
}

int64_t gd_port_now_ns(void)
{
    static LARGE_INTEGER freq; /* racing first callers store the same value */
    LARGE_INTEGER t;
    if (freq.QuadPart == 0) QueryPerformanceFrequency(&freq);
    QueryPerformanceCounter(&t);
    /* seconds and the remainder apart, so that ticks * 1e9 never overflows */
    return (int64_t)(t.QuadPart / freq.QuadPart) * 1000000000 + (int64_t)(t.QuadPart % freq.QuadPart) * 1000000000 / freq.QuadPart;
}

#else
/* ISO C wants every file to declare something, even where this one compiles to nothing. */
typedef int gd_port_win32_elsewhere;
#endif /* _WIN32 */
