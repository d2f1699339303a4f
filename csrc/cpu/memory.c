/* memory.c - the CPU backend's host memory: aligned allocations (huge pages for large ones),
 * what alloc(0) returns, and the counters behind memory_stats. There is no cache to empty.
 */
#define _GNU_SOURCE /* MADV_HUGEPAGE under -std=c11 */

#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "backend_cpu.h"
#include "cpu.h"

#define GD_ALIGN ((size_t)64)         /* cache line: every allocation starts on one */
#define GD_HUGE_MIN ((size_t)4 << 20) /* from here allocations ask for huge pages */
#define GD_PAGE ((uintptr_t)4096)

/* ------------------------------------------------------------------------------------------
 * memory
 *
 * No cache: freed blocks go back to the C library, which keeps and reuses them. Blocks of
 * 4 MiB and more are marked for transparent huge pages (as NumPy marks its own): they fault
 * in about 4x faster than 4 KiB pages when first touched, and streaming over them misses the
 * TLB far less (it matters most in virtual machines, where a miss walks two page tables).
 * They are not aligned to 2 MiB: glibc serves such an aligned request from a bigger chunk,
 * which its heap trims back to the system on free, so every 16 MB result faulted its pages in
 * again (10 faults, 1-3 ms per 2000x2000 a + b; NumPy's result, 0). The kernel backs the
 * 2 MiB-aligned stretches inside the block with huge pages all the same.
 * ---------------------------------------------------------------------------------------- */

static atomic_llong gd_mem_allocated, gd_mem_peak, gd_mem_count, gd_mem_reserved;

/* What alloc(0) returns: a valid, aligned address that is never written. */
static _Alignas(64) unsigned char gd_empty_block[64];

static void gd_mem_count_alloc(size_t nbytes, size_t reserved)
{
    long long now = atomic_fetch_add_explicit(&gd_mem_allocated, (long long)nbytes, memory_order_relaxed) +
                    (long long)nbytes;
    atomic_fetch_add_explicit(&gd_mem_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&gd_mem_reserved, (long long)reserved, memory_order_relaxed);
    long long peak = atomic_load_explicit(&gd_mem_peak, memory_order_relaxed);
    while (now > peak &&
           !atomic_compare_exchange_weak_explicit(&gd_mem_peak, &peak, now, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
}

static size_t gd_reserved_bytes(size_t nbytes) { return (nbytes + GD_ALIGN - 1) & ~(GD_ALIGN - 1); }

int gd_cpu_alloc(void **out, int device, size_t nbytes, gd_error *err)
{
    (void)device;
    *out = NULL;
    if (nbytes == 0) {
        *out = gd_empty_block;
        return GD_OK;
    }
    size_t reserved = gd_reserved_bytes(nbytes);
    void *p = NULL;
    if (reserved < nbytes || posix_memalign(&p, GD_ALIGN, reserved) != 0) {
        char want[32], held[32];
        return gd_set_error(err, GD_ERR_HOST_OOM,
                       "out of host memory allocating %s (%zu bytes); gpudev holds %s of host "
                       "memory in %lld arrays; free some arrays or use a smaller shape",
                       gd_format_bytes(want, sizeof want, nbytes), nbytes,
                       gd_format_bytes(held, sizeof held,
                                       (size_t)atomic_load_explicit(&gd_mem_allocated, memory_order_relaxed)),
                       (long long)atomic_load_explicit(&gd_mem_count, memory_order_relaxed));
    }
#ifdef MADV_HUGEPAGE
    if (nbytes >= GD_HUGE_MIN) { /* madvise wants a page-aligned start; a hint: may fail */
        uintptr_t start = ((uintptr_t)p + GD_PAGE - 1) & ~(GD_PAGE - 1);
        (void)madvise((void *)start, (uintptr_t)p + reserved - start, MADV_HUGEPAGE);
    }
#endif
    gd_mem_count_alloc(nbytes, reserved);
    *out = p;
    return GD_OK;
}

void gd_cpu_free(void *ptr, int device, size_t nbytes)
{
    (void)device;
    if (ptr == NULL || ptr == (void *)gd_empty_block) return;
    size_t reserved = gd_reserved_bytes(nbytes);
    atomic_fetch_sub_explicit(&gd_mem_allocated, (long long)nbytes, memory_order_relaxed);
    atomic_fetch_sub_explicit(&gd_mem_reserved, (long long)reserved, memory_order_relaxed);
    atomic_fetch_sub_explicit(&gd_mem_count, 1, memory_order_relaxed);
    free(ptr);
}

/* ------------------------------------------------------------------------------------------
 * device services: memory statistics (gpudev keeps no host cache: freed memory goes straight
 * back to the C library, so reserved is live blocks plus their alignment padding)
 * ---------------------------------------------------------------------------------------- */

int gd_cpu_get_memory_stats(gd_memory_stats *out, int device, gd_error *err)
{
    (void)device;
    (void)err;
    out->allocated_bytes = atomic_load_explicit(&gd_mem_allocated, memory_order_relaxed);
    out->peak_allocated_bytes = atomic_load_explicit(&gd_mem_peak, memory_order_relaxed);
    out->allocations = atomic_load_explicit(&gd_mem_count, memory_order_relaxed);
    out->reserved_bytes = atomic_load_explicit(&gd_mem_reserved, memory_order_relaxed);
    return GD_OK;
}

void gd_cpu_reset_peak_memory(int device)
{
    (void)device;
    atomic_store_explicit(&gd_mem_peak, atomic_load_explicit(&gd_mem_allocated, memory_order_relaxed),
                          memory_order_relaxed);
}
