/* memory.c - the CPU backend's host memory: aligned allocations (huge pages for large ones),
 * what alloc(0) returns, and the counters behind memory_stats. There is no cache to empty.
 */
#define _GNU_SOURCE /* MADV_HUGEPAGE under -std=c11 */

#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "backend_cpu.h"
#include "cpu.h"

#define GD_ALIGN ((size_t)64)           /* cache line: every allocation starts on one */
#define GD_HUGE_MIN ((size_t)4 << 20)   /* from here allocations ask for huge pages */
#define GD_HUGE_ALIGN ((size_t)2 << 20) /* x86-64 / arm64 transparent huge page size */

/* ------------------------------------------------------------------------------------------
 * memory
 *
 * No cache: freed blocks go back to the C library, which keeps and reuses them. Blocks of
 * 4 MiB and more are aligned to 2 MiB and marked for transparent huge pages: they fault in
 * about 4x faster than 4 KiB pages when first touched, and streaming over them misses the
 * TLB far less (it matters most in virtual machines, where a miss walks two page tables).
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

static size_t gd_alloc_alignment(size_t nbytes) { return nbytes >= GD_HUGE_MIN ? GD_HUGE_ALIGN : GD_ALIGN; }

int gd_cpu_alloc(void **out, int device, size_t nbytes, gd_error *err)
{
    (void)device;
    *out = NULL;
    if (nbytes == 0) {
        *out = gd_empty_block;
        return GD_OK;
    }
    size_t align = gd_alloc_alignment(nbytes);
    size_t reserved = (nbytes + align - 1) & ~(align - 1);
    void *p = NULL;
    if (reserved < nbytes || posix_memalign(&p, align, reserved) != 0) {
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
    if (align == GD_HUGE_ALIGN) (void)madvise(p, reserved, MADV_HUGEPAGE); /* a hint: may fail */
#endif
    gd_mem_count_alloc(nbytes, reserved);
    *out = p;
    return GD_OK;
}

void gd_cpu_free(void *ptr, int device, size_t nbytes)
{
    (void)device;
    if (ptr == NULL || ptr == (void *)gd_empty_block) return;
    size_t align = gd_alloc_alignment(nbytes);
    size_t reserved = (nbytes + align - 1) & ~(align - 1);
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
