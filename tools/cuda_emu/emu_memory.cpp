/* emu_memory.cpp - device memory in the CUDA emulation (see emu.h): host memory tracked per
 * allocation, memory pools as CUDA's stream-ordered allocator has them, the asynchronous
 * copies and memsets, pinned host memory and pointer attributes.
 *
 * Pools: each device has a default pool (release threshold 0, as in CUDA) and a current pool
 * (cudaDeviceSetMemPool), which cudaMallocAsync takes from; cudaMemPoolCreate makes more. A
 * block freed with cudaFreeAsync goes back to its pool when the free runs on its stream, and a
 * later allocation on the same stream may have it back at once (stream order makes that safe,
 * as in CUDA), so a read of freed memory by another stream that nothing orders after the free
 * sees the next owner's data. A pool keeps freed blocks ("reserved") until a synchronization
 * finds it above its release threshold, or cudaMemPoolTrimTo. Every byte reserved, and every
 * byte cuBLAS handles take, counts against the device's memory (gd_emu_set_device_memory).
 *
 * Checks: copies, memsets and products must stay inside live allocations of the right device
 * (a freed block is not live once its free is issued). New memory holds 0xCD bytes, freed
 * memory is overwritten with 0xDD when the free runs, so reads of either show; blocks of more
 * than 64 MiB are left untouched (their pages are never faulted in).
 */
#undef _FORTIFY_SOURCE /* as in every file of the emulation (emu_runtime.cpp) */

#include "emu.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include <sys/mman.h>

struct gd_emu_pool {
    int device;
    bool live;
    uint64_t release_threshold;
    uint64_t reserved; /* bytes held: live blocks and freed ones it keeps */
    uint64_t used;     /* bytes of live blocks */
};

using namespace gd_emu;

namespace {

constexpr size_t kPoisonLimit = (size_t)64 << 20;

enum class BlockState { live, free_pending, cached };

struct Block {
    size_t bytes;    /* what the current owner asked for */
    size_t capacity; /* what was mapped */
    int device;
    gd_emu_pool *pool;
    BlockState state;
    gd_emu_stream *freed_on; /* free_pending: the stream of the free */
    uint64_t generation;     /* counts owners: a queued free acts on its own owner only */
};

std::map<uintptr_t, Block> g_blocks; /* by base address */
std::map<uintptr_t, size_t> g_pinned; /* cudaMallocHost blocks */
std::deque<gd_emu_pool> g_created_pools;
gd_emu_pool g_default_pool[kMaxDevices];
gd_emu_pool *g_current_pool[kMaxDevices];
size_t g_capacity[kMaxDevices];
size_t g_library_bytes[kMaxDevices]; /* taken outside pools (cuBLAS) */

struct DevicePools {
    DevicePools()
    {
        for (int d = 0; d < kMaxDevices; d++) {
            g_default_pool[d] = gd_emu_pool{d, true, 0, 0, 0};
            g_current_pool[d] = &g_default_pool[d];
            g_capacity[d] = kDefaultDeviceBytes;
        }
    }
} g_device_pools;

using Guard = std::lock_guard<std::recursive_mutex>;

size_t device_used(int device)
{
    size_t used = g_library_bytes[device] + g_default_pool[device].reserved;
    for (const gd_emu_pool &p : g_created_pools)
        if (p.device == device) used += p.reserved;
    return used;
}

bool fits(int device, size_t bytes)
{
    return bytes <= g_capacity[device] - std::min(g_capacity[device], device_used(device));
}

void *map_bytes(size_t bytes)
{
    if (bytes > kPoisonLimit) {
        void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        return p == MAP_FAILED ? nullptr : p;
    }
    void *p = nullptr;
    if (posix_memalign(&p, 256, bytes) != 0) return nullptr;
    memset(p, 0xCD, bytes);
    return p;
}

void unmap_bytes(uintptr_t addr, size_t bytes)
{
    if (bytes > kPoisonLimit) munmap((void *)addr, bytes);
    else free((void *)addr);
}

void poison(uintptr_t addr, size_t bytes, int value)
{
    if (bytes <= kPoisonLimit) memset((void *)addr, value, bytes);
}

/* Give back `pool`'s cached blocks until it reserves at most `keep` bytes. */
void trim(gd_emu_pool *pool, uint64_t keep)
{
    for (auto it = g_blocks.begin(); it != g_blocks.end() && pool->reserved > keep;) {
        if (it->second.pool == pool && it->second.state == BlockState::cached) {
            pool->reserved -= it->second.capacity;
            unmap_bytes(it->first, it->second.capacity);
            it = g_blocks.erase(it);
        } else {
            ++it;
        }
    }
}

bool known_pool(const gd_emu_pool *p)
{
    for (const gd_emu_pool &d : g_default_pool)
        if (&d == p) return true;
    for (const gd_emu_pool &c : g_created_pools)
        if (&c == p) return p->live;
    return false;
}

gd_emu_pool &pool_of(cudaMemPool_t p, const char *call)
{
    if (!p || !known_pool(p)) die("%s with a pool that cudaMemPoolCreate never returned or that was destroyed", call);
    return *p;
}

/* The live block holding [p, p + bytes), or null. */
const Block *find_live(const void *p, size_t bytes)
{
    const uintptr_t a = (uintptr_t)p;
    auto it = g_blocks.upper_bound(a);
    if (it == g_blocks.begin()) return nullptr;
    --it;
    const Block &b = it->second;
    if (b.state != BlockState::live || a - it->first >= b.bytes || bytes > b.bytes - (a - it->first)) return nullptr;
    return &b;
}

/* Whether [p, p + bytes) shares a byte with any device block, live or not. */
bool touches_device_memory(const void *p, size_t bytes)
{
    const uintptr_t a = (uintptr_t)p;
    auto it = g_blocks.lower_bound(a + bytes);
    if (it == g_blocks.begin()) return false;
    --it;
    return it->first + it->second.capacity > a;
}

bool is_pinned(const void *p, size_t bytes)
{
    const uintptr_t a = (uintptr_t)p;
    auto it = g_pinned.upper_bound(a);
    if (it == g_pinned.begin()) return false;
    --it;
    return a - it->first < it->second && bytes <= it->second - (a - it->first);
}

bool host_range(const void *p, size_t bytes, const char *call, const char *what)
{
    if (!touches_device_memory(p, bytes)) return true;
    fprintf(stderr, "cuda_emu: %s: %s is device memory, but the copy's kind says host\n", call, what);
    return false;
}

void check_disjoint(const void *dst, const void *src, size_t bytes, const char *call)
{
    const uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    if (bytes && d < s + bytes && s < d + bytes) die("%s: source and destination overlap (undefined on a GPU)", call);
}

/* A freed block of `pool` that an allocation of `bytes` on stream s may have back: one whose
 * free already ran, or one freed on s itself; the smallest that fits. Blocks more than twice
 * the request are left alone: a real pool would hand out only part of them and could still
 * give the rest back, which whole blocks cannot model. */
Block *reusable(gd_emu_pool *pool, size_t bytes, gd_emu_stream *s, uintptr_t *addr)
{
    Block *best = nullptr;
    for (auto &[a, b] : g_blocks) {
        const bool free_here = b.state == BlockState::cached || (b.state == BlockState::free_pending && b.freed_on == s);
        const bool fits_well = b.capacity >= bytes && b.capacity / 2 <= bytes;
        if (b.pool == pool && free_here && fits_well && (!best || b.capacity < best->capacity)) {
            best = &b;
            *addr = a;
        }
    }
    return best;
}

} // namespace

/* ------------------------------------------------------------------------------------------
 * what the other files use
 * ---------------------------------------------------------------------------------------- */

bool gd_emu::device_range(const void *p, size_t bytes, int device, const char *call, const char *what)
{
    Guard guard(lock());
    const Block *b = find_live(p, bytes);
    if (b && b->device == device) return true;
    if (b)
        fprintf(stderr, "cuda_emu: %s: %s is memory of device %d, used on device %d\n", call, what, b->device, device);
    else
        fprintf(stderr, "cuda_emu: %s: %s [%p, +%zu) is not inside one live device allocation\n", call, what, p,
                bytes);
    return false;
}

bool gd_emu::take_device_bytes(int device, size_t bytes)
{
    Guard guard(lock());
    if (!fits(device, bytes)) return false;
    g_library_bytes[device] += bytes;
    return true;
}

void gd_emu::give_device_bytes(int device, size_t bytes)
{
    Guard guard(lock());
    g_library_bytes[device] -= bytes;
}

void gd_emu::release_over_threshold(int device)
{
    trim(&g_default_pool[device], g_default_pool[device].release_threshold);
    for (gd_emu_pool &p : g_created_pools)
        if (p.live && p.device == device) trim(&p, p.release_threshold);
}

extern "C" void gd_emu_set_device_memory(int device, size_t bytes)
{
    if (!valid_device(device)) die("gd_emu_set_device_memory: no device %d", device);
    Guard guard(lock());
    g_capacity[device] = bytes ? bytes : kDefaultDeviceBytes;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    Guard guard(lock());
    *total_bytes = g_capacity[t_device];
    *free_bytes = g_capacity[t_device] - std::min(g_capacity[t_device], device_used(t_device));
    return cudaSuccess;
}

/* ------------------------------------------------------------------------------------------
 * runtime API: pools
 * ---------------------------------------------------------------------------------------- */

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int device)
{
    if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
    *pool = &g_default_pool[device];
    return cudaSuccess;
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *pool, int device)
{
    if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
    Guard guard(lock());
    *pool = g_current_pool[device];
    return cudaSuccess;
}

cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t pool)
{
    if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
    Guard guard(lock());
    if (pool_of(pool, "cudaDeviceSetMemPool").device != device) return fail(cudaErrorInvalidValue);
    g_current_pool[device] = pool;
    return cudaSuccess;
}

/* Device-located pinned pools without sharing handles: what gpudev and most libraries make. */
cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const cudaMemPoolProps *props)
{
    static const unsigned char zeros[sizeof props->reserved] = {0};
    if (props->allocType != cudaMemAllocationTypePinned || props->handleTypes != cudaMemHandleTypeNone ||
        props->location.type != cudaMemLocationTypeDevice || !valid_device(props->location.id) ||
        props->win32SecurityAttributes || props->usage || memcmp(props->reserved, zeros, sizeof zeros) != 0)
        return fail(cudaErrorInvalidValue);
    Guard guard(lock());
    g_created_pools.push_back(gd_emu_pool{props->location.id, true, 0, 0, 0});
    *pool = &g_created_pools.back();
    return cudaSuccess;
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool)
{
    Guard guard(lock());
    gd_emu_pool &p = pool_of(pool, "cudaMemPoolDestroy");
    if (&p == &g_default_pool[p.device]) return fail(cudaErrorInvalidValue);
    if (g_current_pool[p.device] == &p) g_current_pool[p.device] = &g_default_pool[p.device];
    trim(&p, 0);
    p.live = false;
    return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void *value)
{
    Guard guard(lock());
    gd_emu_pool &p = pool_of(pool, "cudaMemPoolSetAttribute");
    if (attr != cudaMemPoolAttrReleaseThreshold) return fail(cudaErrorInvalidValue);
    p.release_threshold = *(const uint64_t *)value;
    return cudaSuccess;
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void *value)
{
    Guard guard(lock());
    const gd_emu_pool &p = pool_of(pool, "cudaMemPoolGetAttribute");
    switch (attr) {
    case cudaMemPoolAttrReleaseThreshold: *(uint64_t *)value = p.release_threshold; break;
    case cudaMemPoolAttrReservedMemCurrent: *(uint64_t *)value = p.reserved; break;
    case cudaMemPoolAttrUsedMemCurrent: *(uint64_t *)value = p.used; break;
    default: return fail(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

/* Only blocks whose free has run are given back; queued frees keep theirs. */
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t min_bytes_to_keep)
{
    Guard guard(lock());
    trim(&pool_of(pool, "cudaMemPoolTrimTo"), min_bytes_to_keep);
    return cudaSuccess;
}

/* ------------------------------------------------------------------------------------------
 * runtime API: stream-ordered allocation
 * ---------------------------------------------------------------------------------------- */

cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream)
{
    if (int st = injected("cudaMallocFromPoolAsync")) return fail((cudaError_t)st);
    Guard guard(lock());
    gd_emu_stream *s = stream_of(stream, "cudaMallocFromPoolAsync");
    gd_emu_pool &p = pool_of(pool, "cudaMallocFromPoolAsync");
    if (p.device != device_of(s))
        die("cudaMallocFromPoolAsync: a pool of device %d on a stream of device %d", p.device, device_of(s));
    if (size == 0) {
        *ptr = nullptr;
        return cudaSuccess;
    }
    uintptr_t addr = 0;
    if (Block *b = reusable(&p, size, s, &addr)) {
        b->state = BlockState::live;
        b->bytes = size;
        b->generation++;
        p.used += size;
        /* the new owner's garbage, in stream order */
        enqueue(s, Kind::bookkeeping, [addr, size] { poison(addr, size, 0xCD); });
        *ptr = (void *)addr;
        return cudaSuccess;
    }
    if (!fits(p.device, size)) return fail(cudaErrorMemoryAllocation);
    void *mem = map_bytes(size);
    if (!mem) return fail(cudaErrorMemoryAllocation);
    g_blocks[(uintptr_t)mem] = Block{size, size, p.device, &p, BlockState::live, nullptr, 0};
    p.reserved += size;
    p.used += size;
    *ptr = mem;
    return cudaSuccess;
}

cudaError_t cudaMallocAsync(void **ptr, size_t size, cudaStream_t stream)
{
    Guard guard(lock());
    const int device = device_of(stream_of(stream, "cudaMallocAsync"));
    return cudaMallocFromPoolAsync(ptr, size, g_current_pool[device], stream);
}

cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream)
{
    Guard guard(lock());
    gd_emu_stream *s = stream_of(stream, "cudaFreeAsync");
    if (!ptr) return cudaSuccess;
    auto it = g_blocks.find((uintptr_t)ptr);
    if (it == g_blocks.end() || it->second.state != BlockState::live) {
        fprintf(stderr, "cuda_emu: cudaFreeAsync: %p is not the start of a live allocation\n", ptr);
        return fail(cudaErrorInvalidValue);
    }
    Block &b = it->second;
    b.state = BlockState::free_pending;
    b.freed_on = s;
    b.pool->used -= b.bytes;
    enqueue(s, Kind::bookkeeping, [addr = it->first, generation = b.generation] {
        Block &blk = g_blocks.at(addr);
        poison(addr, blk.capacity, 0xDD);
        if (blk.generation == generation && blk.state == BlockState::free_pending) blk.state = BlockState::cached;
    });
    return cudaSuccess;
}

/* ------------------------------------------------------------------------------------------
 * runtime API: copies and memsets, run in stream order
 * ---------------------------------------------------------------------------------------- */

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, cudaMemcpyKind kind, cudaStream_t stream)
{
    const char *call = "cudaMemcpyAsync";
    Guard guard(lock());
    if (int st = injected(call)) return fail((cudaError_t)st);
    gd_emu_stream *s = stream_of(stream, call);
    const int device = device_of(s);
    if (count == 0) return cudaSuccess;
    bool ok;
    switch (kind) {
    case cudaMemcpyHostToDevice:
        ok = device_range(dst, count, device, call, "dst") && host_range(src, count, call, "src");
        break;
    case cudaMemcpyDeviceToHost:
        ok = device_range(src, count, device, call, "src") && host_range(dst, count, call, "dst");
        break;
    case cudaMemcpyDeviceToDevice:
        ok = device_range(dst, count, device, call, "dst") && device_range(src, count, device, call, "src");
        break;
    default: ok = false;
    }
    if (!ok) return fail(cudaErrorInvalidValue);
    check_disjoint(dst, src, count, call);
    if (kind == cudaMemcpyHostToDevice && !is_pinned(src, count)) {
        /* pageable memory is staged now: the caller may reuse it when the call returns */
        auto staged = std::make_shared<std::vector<char>>((const char *)src, (const char *)src + count);
        enqueue(s, Kind::work, [dst, staged] { memcpy(dst, staged->data(), staged->size()); });
    } else if (kind == cudaMemcpyDeviceToHost && !is_pinned(dst, count)) {
        /* into pageable memory the copy is done when the call returns, as in CUDA: a copy left
         * queued by an interrupted wait would write into memory its caller has freed */
        if (!wait_for_stream(s)) return cudaErrorEmuInterrupted;
        memcpy(dst, src, count);
    } else {
        enqueue(s, Kind::work, [dst, src, count] { memcpy(dst, src, count); });
    }
    return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream)
{
    const char *call = "cudaMemcpy2DAsync";
    Guard guard(lock());
    if (int st = injected(call)) return fail((cudaError_t)st);
    gd_emu_stream *s = stream_of(stream, call);
    const int device = device_of(s);
    if (kind != cudaMemcpyDeviceToDevice) die("%s: only device-to-device 2-D copies are emulated", call);
    if (width == 0 || height == 0) return cudaSuccess;
    if (dpitch < width || spitch < width || dpitch > kMaxPitch || spitch > kMaxPitch)
        return fail(cudaErrorInvalidValue);
    const size_t dst_extent = (height - 1) * dpitch + width, src_extent = (height - 1) * spitch + width;
    if (!device_range(dst, dst_extent, device, call, "dst") || !device_range(src, src_extent, device, call, "src"))
        return fail(cudaErrorInvalidValue);
    const uintptr_t d = (uintptr_t)dst, sa = (uintptr_t)src;
    if (d < sa + src_extent && sa < d + dst_extent) /* the extents overlap: no row read may overlap a row written */
        for (size_t r = 0; r < height; r++)
            for (size_t q = 0; q < height; q++)
                check_disjoint((const char *)dst + r * dpitch, (const char *)src + q * spitch, width, call);
    enqueue(s, Kind::work, [=] {
        for (size_t r = 0; r < height; r++) memcpy((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
    });
    return cudaSuccess;
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_device, const void *src, int src_device, size_t count,
                                cudaStream_t stream)
{
    const char *call = "cudaMemcpyPeerAsync";
    Guard guard(lock());
    if (int st = injected(call)) return fail((cudaError_t)st);
    gd_emu_stream *s = stream_of(stream, call);
    if (!valid_device(dst_device) || !valid_device(src_device)) return fail(cudaErrorInvalidDevice);
    if (count == 0) return cudaSuccess;
    if (!device_range(dst, count, dst_device, call, "dst") || !device_range(src, count, src_device, call, "src"))
        return fail(cudaErrorInvalidValue);
    check_disjoint(dst, src, count, call);
    enqueue(s, Kind::work, [dst, src, count] { memcpy(dst, src, count); });
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *ptr, int value, size_t count, cudaStream_t stream)
{
    const char *call = "cudaMemsetAsync";
    Guard guard(lock());
    if (int st = injected(call)) return fail((cudaError_t)st);
    gd_emu_stream *s = stream_of(stream, call);
    if (count == 0) return cudaSuccess;
    if (!device_range(ptr, count, device_of(s), call, "ptr")) return fail(cudaErrorInvalidValue);
    enqueue(s, Kind::work, [ptr, value, count] { memset(ptr, value, count); });
    return cudaSuccess;
}

/* ------------------------------------------------------------------------------------------
 * runtime API: pinned host memory, pointer attributes
 * ---------------------------------------------------------------------------------------- */

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    void *p = nullptr;
    if (posix_memalign(&p, 4096, size ? size : 1) != 0) return fail(cudaErrorMemoryAllocation);
    Guard guard(lock());
    g_pinned[(uintptr_t)p] = size ? size : 1;
    *ptr = p;
    return cudaSuccess;
}

/* Like the real one, it waits for nothing: freeing pinned memory a queued copy still reads is
 * the caller's error. */
cudaError_t cudaFreeHost(void *ptr)
{
    Guard guard(lock());
    auto it = g_pinned.find((uintptr_t)ptr);
    if (it == g_pinned.end()) return fail(cudaErrorInvalidValue);
    g_pinned.erase(it);
    free(ptr);
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *attributes, const void *ptr)
{
    Guard guard(lock());
    *attributes = cudaPointerAttributes{cudaMemoryTypeUnregistered, -1, nullptr, nullptr};
    if (is_pinned(ptr, 1)) {
        *attributes = cudaPointerAttributes{cudaMemoryTypeHost, -1, (void *)ptr, (void *)ptr};
    } else if (const Block *b = find_live(ptr, 1)) {
        *attributes = cudaPointerAttributes{cudaMemoryTypeDevice, b->device, (void *)ptr, nullptr};
    }
    return cudaSuccess;
}
