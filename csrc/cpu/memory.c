/* memory.c - the CPU backend's host memory: aligned allocations (huge pages for large ones),
 * a small cache of freed large blocks, what alloc(0) returns, and the counters behind
 * memory_stats.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "backend_cpu.h"
#include "cpu.h"
#include "port.h" /* aligned allocation, huge pages, the machine's memory size, locks */

#define GD_ALIGN ((size_t)64)         /* cache line: every allocation starts on one */
#define GD_HUGE_MIN ((size_t)4 << 20) /* from here allocations ask for huge pages */
#define GD_CACHE_MIN ((size_t)64 << 10)  /* from here freed blocks are kept (below), */
#define GD_CACHE_FINE ((size_t)4 << 10)  /* their sizes rounded up to 4 KiB (a page), */
#define GD_CACHE_COARSE ((size_t)1 << 20) /* and from 1 MiB */
#define GD_CACHE_ROUND ((size_t)64 << 10) /* to 64 KiB */

/* ------------------------------------------------------------------------------------------
 * memory
 *
 * Blocks of 4 MiB and more are marked for transparent huge pages (as NumPy marks its own):
 * they fault in about 4x faster than 4 KiB pages when first touched, and streaming over them
 * misses the TLB far less (it matters most in virtual machines, where a miss walks two page
 * tables). They are not aligned to 2 MiB: glibc serves such an aligned request from a bigger
 * chunk, which its heap trims back to the system on free; the kernel backs the 2 MiB-aligned
 * stretches inside the block with huge pages all the same.
 *
 * Freed blocks of GD_CACHE_MIN bytes and more are kept (below) and handed out again: glibc
 * maps blocks past its mmap threshold (128 KiB at first, raised up to 32 MiB by the sizes it
 * unmaps) and unmaps them on free, and trims its heap once more than twice that is free at
 * its top, so a loop that makes the same large results every step faulted every page of them
 * in again, each time. Measured side by side with NumPy in one process (2-core AMD EPYC VM,
 * quiet, median of 7): 1000x1000 float32 a @ b took 4.95 ms (1.2 ms of it system time, 839
 * page faults per call) against NumPy's 4.13 ms (0 faults); 4000x4000 took 330 ms with 72 ms
 * of system time (808 faults, some of them compacting memory for huge pages) against 254 ms.
 * With the blocks from 1 MiB kept: 0 faults, 4.11 / 240 ms against NumPy's 4.31 / 242 ms.
 * Training steps free smaller blocks too: d2l's LeNet on batches of 128 makes 21 blocks of
 * 75 KiB to 9.6 MiB a step (activations such as 128x16x10x10 float32, 800 KiB, their
 * gradients, the im2col buffers). While only those from 1 MiB were kept, whether glibc gave
 * the others back depended on what the process had freed before (its thresholds move) and on
 * timing (it did so more often with other processes busy), and varied from one script, or
 * run, to the next: an epoch of 20 steps on one thread took 5, 3,000, 9,200 or 18,300 page
 * faults, at worst with 40-50 ms of system time, about 15% of its CPU time (2-core AMD EPYC
 * VM). With blocks from 64 KiB kept: 5-7 faults and 0-3 ms, in every run tried.
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

/* The bytes a block of nbytes takes: whole cache lines, or for blocks the cache keeps whole
 * pages below 1 MiB and whole GD_CACHE_ROUND steps from there, which wastes at most 1/16 of
 * a block (4 KiB of 64 KiB, 64 KiB of 1 MiB). Past SIZE_MAX it wraps below nbytes, which
 * alloc refuses. */
static size_t gd_reserved_bytes(size_t nbytes)
{
    const size_t step = nbytes >= GD_CACHE_COARSE ? GD_CACHE_ROUND
                        : nbytes >= GD_CACHE_MIN  ? GD_CACHE_FINE
                                                  : GD_ALIGN;
    return (nbytes + step - 1) & ~(step - 1);
}

/* ------------------------------------------------------------------------------------------
 * the cache of freed large blocks
 *
 * A freed block of GD_CACHE_MIN bytes or more waits here for an allocation of the same size
 * (sizes from GD_CACHE_MIN are rounded up to 4 KiB, and from 1 MiB to 64 KiB, which lets
 * shapes that differ a little share blocks and wastes at most 1/16 of one), and the oldest
 * blocks go back to the system once the cache holds more than GD_CACHE_SLOTS blocks or an
 * eighth of the host's memory (as the GPU pool keeps an eighth of the GPU's). 64 slots are
 * four times what a LeNet step needs to find all its blocks again (with 12, a fifth of them
 * were missed), and finding a size is one scan of them under the lock: gd.empty and its free,
 * cycling through 64 cached sizes each found last, took 180-205 ns against 170 ns for 16
 * (where the old 16 slots missed all 64 sizes: 4.6 us). Cached bytes count as reserved in
 * memory_stats; empty_cache('cpu') gives them all back, and so does an allocation that the
 * system refuses, before it tries again. AddressSanitizer builds keep no blocks, so that a use
 * after free is still reported.
 * ---------------------------------------------------------------------------------------- */

#define GD_CACHE_SLOTS 64

#if defined(__SANITIZE_ADDRESS__)
#define GD_CACHE_ON 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GD_CACHE_ON 0
#endif
#endif
#ifndef GD_CACHE_ON
#define GD_CACHE_ON 1
#endif

typedef struct gd_cached_block {
    void *ptr;
    size_t reserved;
} gd_cached_block;

static struct {
    gd_mutex_t lock;
    gd_cached_block blocks[GD_CACHE_SLOTS]; /* oldest first */
    int count;
    size_t bytes;
} gd_cache = {.lock = GD_MUTEX_INIT};

/* An eighth of the host's memory, read once (1 GiB where the system does not say). */
static size_t gd_cache_max;
static gd_once_t gd_cache_max_once = GD_ONCE_INIT;

static void gd_cache_max_init(void)
{
    const uint64_t bytes = gd_port_memory_bytes();
    gd_cache_max = bytes > 0 ? (size_t)(bytes / 8) : (size_t)1 << 30;
}

static size_t gd_cache_limit(void)
{
    gd_once(&gd_cache_max_once, gd_cache_max_init);
    return gd_cache_max;
}

/* Removes slot i (the caller holds the lock) and returns its block. */
static void *gd_cache_take(int i)
{
    void *p = gd_cache.blocks[i].ptr;
    gd_cache.bytes -= gd_cache.blocks[i].reserved;
    for (int j = i + 1; j < gd_cache.count; j++) gd_cache.blocks[j - 1] = gd_cache.blocks[j];
    gd_cache.count--;
    return p;
}

/* A cached block of `reserved` bytes, the most recently freed one, or NULL. */
static void *gd_cache_get(size_t reserved)
{
    if (!GD_CACHE_ON || reserved < GD_CACHE_MIN) return NULL;
    void *p = NULL;
    gd_mutex_lock(&gd_cache.lock);
    for (int i = gd_cache.count - 1; i >= 0 && !p; i--)
        if (gd_cache.blocks[i].reserved == reserved) p = gd_cache_take(i);
    gd_mutex_unlock(&gd_cache.lock);
    return p;
}

/* Keeps a freed block (1) or leaves it to the caller to free (0); blocks pushed out to
 * make room are freed here, outside the lock. */
static int gd_cache_put(void *ptr, size_t reserved)
{
    if (!GD_CACHE_ON || reserved < GD_CACHE_MIN || reserved > gd_cache_limit()) return 0;
    void *evicted[GD_CACHE_SLOTS];
    int n = 0;
    gd_mutex_lock(&gd_cache.lock);
    while (gd_cache.count > 0 && (gd_cache.count == GD_CACHE_SLOTS || gd_cache.bytes + reserved > gd_cache_limit())) {
        atomic_fetch_sub_explicit(&gd_mem_reserved, (long long)gd_cache.blocks[0].reserved, memory_order_relaxed);
        evicted[n++] = gd_cache_take(0);
    }
    gd_cache.blocks[gd_cache.count++] = (gd_cached_block){ptr, reserved};
    gd_cache.bytes += reserved;
    gd_mutex_unlock(&gd_cache.lock);
    for (int i = 0; i < n; i++) gd_port_aligned_free(evicted[i]);
    return 1;
}

/* Gives every cached block back to the system; the bytes it freed. */
static size_t gd_cache_release(void)
{
    gd_cached_block blocks[GD_CACHE_SLOTS];
    gd_mutex_lock(&gd_cache.lock);
    int n = gd_cache.count;
    size_t bytes = gd_cache.bytes;
    for (int i = 0; i < n; i++) blocks[i] = gd_cache.blocks[i];
    gd_cache.count = 0;
    gd_cache.bytes = 0;
    atomic_fetch_sub_explicit(&gd_mem_reserved, (long long)bytes, memory_order_relaxed);
    gd_mutex_unlock(&gd_cache.lock);
    for (int i = 0; i < n; i++) gd_port_aligned_free(blocks[i].ptr);
    return bytes;
}

int gd_cpu_alloc(void **out, int device, size_t nbytes, gd_error *err)
{
    (void)device;
    *out = NULL;
    if (nbytes == 0) {
        *out = gd_empty_block;
        return GD_OK;
    }
    size_t reserved = gd_reserved_bytes(nbytes);
    void *p = gd_cache_get(reserved);
    if (p) { /* already counted as reserved, and marked for huge pages when it was made */
        gd_mem_count_alloc(nbytes, 0);
        *out = p;
        return GD_OK;
    }
    int failed = reserved < nbytes || (p = gd_port_aligned_alloc(reserved, GD_ALIGN)) == NULL;
    if (failed && reserved >= nbytes && gd_cache_release() > 0) failed = (p = gd_port_aligned_alloc(reserved, GD_ALIGN)) == NULL;
    if (failed) {
        char want[32], held[32];
        return gd_set_error(err, GD_ERR_HOST_OOM,
                       "out of host memory allocating %s (%zu bytes); gpudev holds %s of host "
                       "memory in %lld arrays; free some arrays or use a smaller shape",
                       gd_format_bytes(want, sizeof want, nbytes), nbytes,
                       gd_format_bytes(held, sizeof held,
                                       (size_t)atomic_load_explicit(&gd_mem_allocated, memory_order_relaxed)),
                       (long long)atomic_load_explicit(&gd_mem_count, memory_order_relaxed));
    }
    if (nbytes >= GD_HUGE_MIN) gd_port_hint_huge_pages(p, reserved);
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
    atomic_fetch_sub_explicit(&gd_mem_count, 1, memory_order_relaxed);
    if (gd_cache_put(ptr, reserved)) return; /* still reserved */
    atomic_fetch_sub_explicit(&gd_mem_reserved, (long long)reserved, memory_order_relaxed);
    gd_port_aligned_free(ptr);
}

/* ------------------------------------------------------------------------------------------
 * device services: memory statistics (reserved: live blocks with their rounding, to 64 bytes
 * or for blocks the cache keeps to 4 or 64 KiB, and the cached ones) and giving the cache back
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

int gd_cpu_empty_cache(int device, gd_error *err)
{
    (void)device;
    (void)err;
    gd_cache_release();
    return GD_OK;
}
