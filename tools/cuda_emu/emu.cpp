/* emu.cpp - a CPU emulation of just enough of the CUDA runtime and cuBLAS to run gpudev's CUDA
 * backend (csrc/cuda) for its logic, so that the backend conformance test (tests/c) checks the
 * real kernel code on machines without a GPU: index math, broadcasting, reductions,
 * __syncthreads barriers and warp shuffles, launch configurations, device and stream
 * bookkeeping, and the row-major to column-major operand swap of the matrix products. It does not model timing, concurrency
 * between streams or GPUs, or the GPU memory model: every copy, launch and product runs to
 * completion on the host when it is issued, and device memory is host memory.
 *
 * Kernels: each block runs as blockDim threads, one block after another. A thread is a fiber
 * with its own stack that runs until it finishes or reaches a barrier (__syncthreads, or the
 * warp barriers inside a shuffle); only then does another thread run: the lowest-numbered one
 * that can in one block, the highest in the next. So a missing barrier shows up as a wrong
 * result, and threads that wait at different barriers, or exit while others wait, stop the
 * program with a message instead of passing by luck.
 *
 * Two emulated GPUs with 2 multiprocessors each. Device memory is tracked per allocation:
 * copies, memsets, frees and matrix products are checked to stay inside allocations of the
 * right device. Misuse that the CUDA runtime reports as an error status returns that status
 * (and the backend must handle it); undefined behaviour on a GPU (divergent barriers, reads
 * outside allocations, overlapping copies) and uses outside what gpudev's backend promises (the
 * legacy default stream, blocking streams) print "cuda_emu: ..." and abort.
 */

/* Threads switch with _setjmp/_longjmp between stacks, which the fortified longjmp refuses. */
#undef _FORTIFY_SOURCE

#include "cublas_v2.h"
#include "cuda_runtime.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <csetjmp>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

namespace {

constexpr int kDevices = 2;
constexpr int kMultiprocessors = 2;
constexpr size_t kDeviceBytes = (size_t)80 << 30;
constexpr size_t kMaxPitch = 2147483647;

[[noreturn]] __attribute__((format(printf, 1, 2))) void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fputs("cuda_emu: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

/* ------------------------------------------------------------------------------------------
 * errors, devices
 * ---------------------------------------------------------------------------------------- */

thread_local cudaError_t t_last_error = cudaSuccess; /* per host thread, as in CUDA */
thread_local int t_device = 0;

/* Record a failure for cudaGetLastError and return it. */
cudaError_t fail(cudaError_t e)
{
    if (e != cudaSuccess) t_last_error = e;
    return e;
}

bool valid_device(int d) { return d >= 0 && d < kDevices; }

std::mutex g_mutex; /* guards the handle and allocation tables below */

} // namespace

struct gd_emu_stream {
    int device;
};
struct gd_emu_event {
    int device;
    bool timing;   /* created without cudaEventDisableTiming */
    bool live;     /* not destroyed */
    bool recorded;
    std::chrono::steady_clock::time_point when; /* of the last record */
};
struct gd_emu_pool {
    int device;
    uint64_t release_threshold;
};
struct gd_emu_blas {
    int device;
    cudaStream_t stream;
    cublasMath_t mode;
    bool live;
};

namespace {

std::deque<gd_emu_stream> g_streams; /* a deque never moves its elements: handles stay valid */
std::deque<gd_emu_event> g_events;
std::deque<gd_emu_blas> g_blas;
gd_emu_pool g_pools[kDevices] = {{0, 0}, {1, 0}};

template <class T> bool known(const std::deque<T> &table, const T *p)
{
    for (const T &x : table)
        if (&x == p) return true;
    return false;
}

/* gpudev's backend queues everything on its own non-blocking streams. */
const gd_emu_stream &stream_of(cudaStream_t s, const char *call)
{
    if (!s) die("%s on the legacy default stream: gpudev's backend must use its per-device streams", call);
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!known(g_streams, s)) die("%s on a stream cudaStreamCreateWithFlags never returned", call);
    return *s;
}

/* ------------------------------------------------------------------------------------------
 * device memory: host memory, tracked per allocation
 * ---------------------------------------------------------------------------------------- */

struct Allocation {
    size_t bytes;
    int device;
};
std::map<uintptr_t, Allocation> g_allocations; /* by base address */
size_t g_live_bytes[kDevices];

/* The allocation holding [p, p + bytes), or null. Caller holds g_mutex. */
const Allocation *find_allocation(const void *p, size_t bytes)
{
    const uintptr_t a = (uintptr_t)p;
    auto it = g_allocations.upper_bound(a);
    if (it == g_allocations.begin()) return nullptr;
    --it;
    if (a - it->first >= it->second.bytes || bytes > it->second.bytes - (a - it->first)) return nullptr;
    return &it->second;
}

/* Whether [p, p + bytes) shares a byte with any allocation. */
bool touches_device_memory(const void *p, size_t bytes)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    const uintptr_t a = (uintptr_t)p;
    auto it = g_allocations.lower_bound(a + bytes); /* the first allocation starting at or after the end */
    if (it == g_allocations.begin()) return false;
    --it;
    return it->first + it->second.bytes > a;
}

/* [p, p + bytes) lies in one allocation of `device`. */
bool device_range(const void *p, size_t bytes, int device, const char *call, const char *what)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    const Allocation *a = find_allocation(p, bytes);
    if (a && a->device == device) return true;
    if (a)
        fprintf(stderr, "cuda_emu: %s: %s is memory of device %d, used on device %d\n", call, what, a->device, device);
    else
        fprintf(stderr, "cuda_emu: %s: %s [%p, +%zu) is not inside one device allocation\n", call, what, p, bytes);
    return false;
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

/* ------------------------------------------------------------------------------------------
 * kernel execution: one fiber per thread of the running block
 * ---------------------------------------------------------------------------------------- */

constexpr int kMaxBlockThreads = 1024;
constexpr size_t kStackBytes = (size_t)256 << 10;

struct Barrier {
    int arrived;                   /* threads waiting at it now */
    int waiting[kMaxBlockThreads]; /* which */
};

struct Fiber {
    jmp_buf context;     /* where it continues */
    uint3 index;         /* its threadIdx */
    bool finished;       /* done with the current block */
    Barrier *waiting_at; /* the barrier it waits at, or null */
};

/* The threads that can run (not running, waiting or finished), one bit each. */
struct ReadySet {
    uint64_t bits[kMaxBlockThreads / 64];
    void add(int t) { bits[t >> 6] |= 1ull << (t & 63); }
    void remove(int t) { bits[t >> 6] &= ~(1ull << (t & 63)); }
    int lowest() const
    {
        for (int w = 0; w < kMaxBlockThreads / 64; w++)
            if (bits[w]) return w * 64 + __builtin_ctzll(bits[w]);
        return -1;
    }
    int highest() const
    {
        for (int w = kMaxBlockThreads / 64 - 1; w >= 0; w--)
            if (bits[w]) return w * 64 + 63 - __builtin_clzll(bits[w]);
        return -1;
    }
};

Fiber g_fibers[kMaxBlockThreads];
int g_fibers_created;
jmp_buf g_scheduler;    /* where a fiber that waits or finishes returns to */
ucontext_t g_boot;      /* where a new fiber returns to once it is ready */
int g_running = -1;     /* linear index of the running thread, -1 outside kernels */
int g_block_threads;
Barrier g_block_barrier, g_warp_barrier[kMaxBlockThreads / 32];
ReadySet g_ready;
unsigned long long g_shuffle_slots[kMaxBlockThreads / 32][32];
void (*g_body)(void *);
void *g_body_context;

struct Statistics {
    long long launches, blocks, threads;
    ~Statistics()
    {
        if (launches)
            printf("cuda_emu: %lld kernel launches, %lld blocks, %lld threads on %d emulated GPUs\n", launches, blocks,
                   threads, kDevices);
    }
} g_stats;

/* A fiber's first frame. It parks itself at once; each later resume runs the kernel body for
 * the thread the scheduler chose (g_running) and returns to the scheduler when it is done. */
void fiber_entry()
{
    if (_setjmp(g_fibers[g_running].context) == 0) setcontext(&g_boot);
    for (;;) {
        g_body(g_body_context);
        Fiber &self = g_fibers[g_running];
        self.finished = true;
        if (_setjmp(self.context) == 0) _longjmp(g_scheduler, 1);
    }
}

void create_fiber(int i)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *mem = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                     -1, 0);
    if (mem == MAP_FAILED) die("no memory for a thread stack");
    if (mprotect(mem, page, PROT_NONE) != 0) die("cannot protect a thread stack's guard page"); /* overflow faults */
    ucontext_t uc;
    if (getcontext(&uc) != 0) die("getcontext failed");
    uc.uc_stack.ss_sp = (char *)mem + page;
    uc.uc_stack.ss_size = kStackBytes;
    uc.uc_link = nullptr;
    makecontext(&uc, fiber_entry, 0);
    g_running = i;
    if (swapcontext(&g_boot, &uc) != 0) die("swapcontext failed");
    g_running = -1;
}

void resume(int i)
{
    g_running = i;
    threadIdx = g_fibers[i].index;
    if (_setjmp(g_scheduler) == 0) _longjmp(g_fibers[i].context, 1);
    g_running = -1;
}

/* The running thread arrives at `b`, which `members` threads must reach. The last to arrive
 * releases the others and goes on; the others wait, and other threads run. */
void arrive_and_wait(Barrier &b, int members)
{
    if (b.arrived + 1 == members) {
        for (int i = 0; i < b.arrived; i++) {
            g_fibers[b.waiting[i]].waiting_at = nullptr;
            g_ready.add(b.waiting[i]);
        }
        b.arrived = 0;
        return;
    }
    b.waiting[b.arrived++] = g_running;
    Fiber &self = g_fibers[g_running];
    self.waiting_at = &b;
    if (_setjmp(self.context) == 0) _longjmp(g_scheduler, 1);
}

int warp_members(int warp) { return std::min(32, g_block_threads - warp * 32); }

unsigned warp_mask(int warp)
{
    const int n = warp_members(warp);
    return n == 32 ? 0xffffffffu : (1u << n) - 1;
}

const gd_emu_site *g_site;

[[noreturn]] void die_in_kernel(const char *what)
{
    die("%s:%d: %s in block (%u,%u,%u) of %s", g_site->file, g_site->line, what, blockIdx.x, blockIdx.y, blockIdx.z,
        g_site->kernel);
}

/* No thread can run: say why. */
[[noreturn]] void stuck()
{
    int finished = 0, at_block = 0, at_warp = 0;
    for (int t = 0; t < g_block_threads; t++) {
        const Fiber &f = g_fibers[t];
        if (f.finished) finished++;
        else if (f.waiting_at == &g_block_barrier) at_block++;
        else at_warp++;
    }
    char what[256];
    if (at_block && finished)
        snprintf(what, sizeof what, "%d threads wait at __syncthreads, %d exited (a barrier in divergent code)",
                 at_block, finished);
    else if (at_block && at_warp)
        snprintf(what, sizeof what, "%d threads wait at __syncthreads, %d in a warp shuffle", at_block, at_warp);
    else
        snprintf(what, sizeof what, "%d threads wait in a warp shuffle whose warp has lanes that exited", at_warp);
    die_in_kernel(what);
}

/* Runs the threads of the current block until all have finished, always the lowest-numbered
 * thread that can run (or, when `reverse`, the highest), as far as it gets. So low (or high)
 * threads and warps run ahead of the others to their next barrier and beyond, which makes
 * code that is missing a barrier, before a read or before a buffer is reused, read the
 * wrong data in one of the two orders. */
void run_block(bool reverse)
{
    const int n = g_block_threads;
    g_block_barrier.arrived = 0;
    for (Barrier &w : g_warp_barrier) w.arrived = 0;
    g_ready = ReadySet{};
    for (int t = 0; t < n; t++) {
        g_fibers[t].finished = false;
        g_fibers[t].waiting_at = nullptr;
        g_ready.add(t);
    }
    int finished = 0;
    for (int t; (t = reverse ? g_ready.highest() : g_ready.lowest()) >= 0;) {
        g_ready.remove(t);
        resume(t);
        if (g_fibers[t].finished) finished++;
    }
    if (finished != n) stuck();
}

std::mutex g_launch_mutex; /* one launch at a time: the fibers and the index variables are shared */

} // namespace

void gd_emu_syncthreads()
{
    if (g_running < 0) die("__syncthreads outside a kernel");
    arrive_and_wait(g_block_barrier, g_block_threads);
}

void gd_emu_syncwarp(unsigned mask)
{
    if (g_running < 0) die("a warp barrier outside a kernel");
    const int warp = g_running >> 5;
    if (mask != warp_mask(warp)) die_in_kernel("a warp operation with a mask other than all lanes of the warp");
    arrive_and_wait(g_warp_barrier[warp], warp_members(warp));
}

unsigned long long *gd_emu_shfl_slots(unsigned mask, int lane_mask, int width)
{
    if (g_running < 0) die("a warp shuffle outside a kernel");
    if (width != 32) die_in_kernel("a shuffle of width other than 32 (not emulated)");
    const int warp = g_running >> 5;
    if (mask != warp_mask(warp)) die_in_kernel("a shuffle with a mask other than all lanes of the warp (not emulated)");
    if (lane_mask < 0 || lane_mask > 31 || ((g_running & 31) ^ lane_mask) >= warp_members(warp))
        die_in_kernel("a shuffle from a lane that does not exist");
    return g_shuffle_slots[warp];
}

int gd_emu_lane() { return g_running & 31; }

void gd_emu_run(const gd_emu_site &site, dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                void (*thread_body)(void *), void *context)
{
    if (g_running >= 0)
        die("%s:%d: %s launched from inside a kernel (not emulated)", site.file, site.line, site.kernel);
    const gd_emu_stream &s = stream_of(stream, site.kernel);
    if (shared_bytes != 0) die("%s:%d: %s: dynamic shared memory is not emulated", site.file, site.line, site.kernel);
    const unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535 ||
        block.x == 0 || block.y == 0 || block.z == 0 || block.x > 1024 || block.y > 1024 || block.z > 64 ||
        threads > (unsigned long long)kMaxBlockThreads) {
        fail(cudaErrorInvalidConfiguration);
        return;
    }
    if (s.device != t_device) { /* a launch goes to a stream of the current device */
        fail(cudaErrorInvalidResourceHandle);
        return;
    }

    std::lock_guard<std::mutex> lock(g_launch_mutex);
    g_block_threads = (int)threads;
    while (g_fibers_created < g_block_threads) create_fiber(g_fibers_created++);
    for (int t = 0; t < g_block_threads; t++)
        g_fibers[t].index = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
    g_site = &site;
    g_body = thread_body;
    g_body_context = context;
    gridDim = grid;
    blockDim = block;
    const unsigned long long blocks = (unsigned long long)grid.x * grid.y * grid.z;
    for (unsigned long long b = 0; b < blocks; b++) {
        blockIdx = uint3{(unsigned)(b % grid.x), (unsigned)(b / grid.x % grid.y), (unsigned)(b / grid.x / grid.y)};
        run_block(((unsigned long long)g_stats.launches + b) & 1); /* both orders, in every kernel */
    }
    g_stats.launches++;
    g_stats.blocks += (long long)blocks;
    g_stats.threads += (long long)(blocks * threads);
    g_body = nullptr;
    g_site = nullptr;
}

/* ------------------------------------------------------------------------------------------
 * runtime API
 * ---------------------------------------------------------------------------------------- */

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = t_last_error;
    t_last_error = cudaSuccess;
    return e;
}

namespace {
struct ErrorText {
    cudaError_t e;
    const char *name, *text;
};
const ErrorText g_error_text[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient"},
    {cudaErrorDevicesUnavailable, "cudaErrorDevicesUnavailable", "CUDA-capable device(s) busy or unavailable"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorECCUncorrectable, "cudaErrorECCUncorrectable", "uncorrectable ECC error encountered"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchTimeout, "cudaErrorLaunchTimeout", "the launch timed out and was terminated"},
    {cudaErrorAssert, "cudaErrorAssert", "device-side assert triggered"},
    {cudaErrorHardwareStackError, "cudaErrorHardwareStackError", "hardware stack error"},
    {cudaErrorIllegalInstruction, "cudaErrorIllegalInstruction", "an illegal instruction was encountered"},
    {cudaErrorMisalignedAddress, "cudaErrorMisalignedAddress", "misaligned address"},
    {cudaErrorInvalidAddressSpace, "cudaErrorInvalidAddressSpace",
     "operation not supported on global/shared address space"},
    {cudaErrorInvalidPc, "cudaErrorInvalidPc", "invalid program counter"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
};
const ErrorText *error_text(cudaError_t e)
{
    for (const ErrorText &t : g_error_text)
        if (t.e == e) return &t;
    return nullptr;
}
} // namespace

const char *cudaGetErrorName(cudaError_t e)
{
    const ErrorText *t = error_text(e);
    return t ? t->name : "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t e)
{
    const ErrorText *t = error_text(e);
    return t ? t->text : "unknown error";
}

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = kDevices;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    *device = t_device;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
    t_device = device;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device)
{
    if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
    switch (attr) {
    case cudaDevAttrMaxPitch: *value = (int)kMaxPitch; break;
    case cudaDevAttrClockRate: *value = 1980000; break;       /* kHz */
    case cudaDevAttrMultiProcessorCount: *value = kMultiprocessors; break;
    case cudaDevAttrMemoryClockRate: *value = 2619000; break; /* kHz */
    default: return fail(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device)
{
    if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
    *prop = cudaDeviceProp{};
    snprintf(prop->name, sizeof prop->name, "gpudev CUDA emulator %d", device);
    prop->totalGlobalMem = kDeviceBytes;
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = kMultiprocessors;
    prop->memoryBusWidth = 5120;
    prop->l2CacheSize = 50 << 20;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *version)
{
    *version = 13000;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *version)
{
    *version = 13000;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; } /* all work is done when issued */

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    *total_bytes = kDeviceBytes;
    *free_bytes = kDeviceBytes - std::min(kDeviceBytes, g_live_bytes[t_device]);
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags)
{
    if (!(flags & cudaStreamNonBlocking))
        die("cudaStreamCreateWithFlags without cudaStreamNonBlocking: gpudev's streams never wait for the legacy "
            "default stream");
    std::lock_guard<std::mutex> lock(g_mutex);
    g_streams.push_back(gd_emu_stream{t_device});
    *stream = &g_streams.back();
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    stream_of(stream, "cudaStreamSynchronize");
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    g_events.push_back(gd_emu_event{t_device, !(flags & cudaEventDisableTiming), true, false, {}});
    *event = &g_events.back();
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) { return cudaEventCreateWithFlags(event, 0); }

namespace {
gd_emu_event &event_of(cudaEvent_t e, const char *call)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!e || !known(g_events, e) || !e->live)
        die("%s with an event that cudaEventCreate never returned or that was destroyed", call);
    return *e;
}
} // namespace

/* The event and the stream must belong to the same device (CUDA refuses otherwise). */
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    gd_emu_event &e = event_of(event, "cudaEventRecord");
    if (e.device != stream_of(stream, "cudaEventRecord").device) return fail(cudaErrorInvalidResourceHandle);
    e.recorded = true;
    e.when = std::chrono::steady_clock::now();
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    event_of(event, "cudaEventSynchronize");
    return cudaSuccess;
}

/* As CUDA: both events recorded, both with timing, on one device. */
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    const gd_emu_event &a = event_of(start, "cudaEventElapsedTime"), &b = event_of(end, "cudaEventElapsedTime");
    if (!a.recorded || !b.recorded || !a.timing || !b.timing || a.device != b.device)
        return fail(cudaErrorInvalidResourceHandle);
    *ms = std::chrono::duration<float, std::milli>(b.when - a.when).count();
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    event_of(event, "cudaEventDestroy").live = false;
    return cudaSuccess;
}

/* Waiting on another device's event is allowed; with in-order execution it is always met. */
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags)
{
    stream_of(stream, "cudaStreamWaitEvent");
    event_of(event, "cudaStreamWaitEvent");
    if (flags != 0) return fail(cudaErrorInvalidValue);
    return cudaSuccess;
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int device)
{
    if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
    *pool = &g_pools[device];
    return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void *value)
{
    if (attr != cudaMemPoolAttrReleaseThreshold) return fail(cudaErrorInvalidValue);
    pool->release_threshold = *(const uint64_t *)value;
    return cudaSuccess;
}

/* The pool reserves exactly what is allocated: nothing is cached. */
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void *value)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    switch (attr) {
    case cudaMemPoolAttrReleaseThreshold: *(uint64_t *)value = pool->release_threshold; break;
    case cudaMemPoolAttrReservedMemCurrent: *(uint64_t *)value = g_live_bytes[pool->device]; break;
    default: return fail(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t, size_t) { return cudaSuccess; }

/* From the stream's device. New memory holds garbage (0xCD bytes), as device memory does. */
cudaError_t cudaMallocAsync(void **ptr, size_t size, cudaStream_t stream)
{
    const int device = stream_of(stream, "cudaMallocAsync").device;
    if (size == 0) {
        *ptr = nullptr;
        return cudaSuccess;
    }
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (size > kDeviceBytes - std::min(kDeviceBytes, g_live_bytes[device])) return fail(cudaErrorMemoryAllocation);
    }
    void *p = nullptr;
    if (posix_memalign(&p, 256, size) != 0) return fail(cudaErrorMemoryAllocation);
    memset(p, 0xCD, size);
    std::lock_guard<std::mutex> lock(g_mutex);
    g_allocations[(uintptr_t)p] = Allocation{size, device};
    g_live_bytes[device] += size;
    *ptr = p;
    return cudaSuccess;
}

/* The memory is overwritten (0xDD bytes) before it is released, so reads after the free show. */
cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream)
{
    stream_of(stream, "cudaFreeAsync");
    if (!ptr) return cudaSuccess;
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_allocations.find((uintptr_t)ptr);
    if (it == g_allocations.end()) {
        fprintf(stderr, "cuda_emu: cudaFreeAsync: %p is not the start of a live allocation\n", ptr);
        return fail(cudaErrorInvalidValue);
    }
    memset(ptr, 0xDD, it->second.bytes);
    g_live_bytes[it->second.device] -= it->second.bytes;
    g_allocations.erase(it);
    free(ptr);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, cudaMemcpyKind kind, cudaStream_t stream)
{
    const char *call = "cudaMemcpyAsync";
    const int device = stream_of(stream, call).device;
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
    memcpy(dst, src, count);
    return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream)
{
    const char *call = "cudaMemcpy2DAsync";
    const int device = stream_of(stream, call).device;
    if (kind != cudaMemcpyDeviceToDevice) die("%s: only device-to-device 2-D copies are emulated", call);
    if (width == 0 || height == 0) return cudaSuccess;
    if (dpitch < width || spitch < width || dpitch > kMaxPitch || spitch > kMaxPitch)
        return fail(cudaErrorInvalidValue);
    const size_t dst_extent = (height - 1) * dpitch + width, src_extent = (height - 1) * spitch + width;
    if (!device_range(dst, dst_extent, device, call, "dst") || !device_range(src, src_extent, device, call, "src"))
        return fail(cudaErrorInvalidValue);
    const uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    if (d < s + src_extent && s < d + dst_extent) /* the extents overlap: no row read may overlap a row written */
        for (size_t r = 0; r < height; r++)
            for (size_t q = 0; q < height; q++)
                check_disjoint((const char *)dst + r * dpitch, (const char *)src + q * spitch, width, call);
    for (size_t r = 0; r < height; r++) memcpy((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
    return cudaSuccess;
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_device, const void *src, int src_device, size_t count,
                                cudaStream_t stream)
{
    const char *call = "cudaMemcpyPeerAsync";
    stream_of(stream, call);
    if (!valid_device(dst_device) || !valid_device(src_device)) return fail(cudaErrorInvalidDevice);
    if (count == 0) return cudaSuccess;
    if (!device_range(dst, count, dst_device, call, "dst") || !device_range(src, count, src_device, call, "src"))
        return fail(cudaErrorInvalidValue);
    check_disjoint(dst, src, count, call);
    memcpy(dst, src, count);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *ptr, int value, size_t count, cudaStream_t stream)
{
    const char *call = "cudaMemsetAsync";
    const int device = stream_of(stream, call).device;
    if (count == 0) return cudaSuccess;
    if (!device_range(ptr, count, device, call, "ptr")) return fail(cudaErrorInvalidValue);
    memset(ptr, value, count);
    return cudaSuccess;
}

/* ------------------------------------------------------------------------------------------
 * cuBLAS: column-major reference products
 * ---------------------------------------------------------------------------------------- */

cublasStatus_t cublasCreate(cublasHandle_t *handle)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    g_blas.push_back(gd_emu_blas{t_device, nullptr, CUBLAS_DEFAULT_MATH, true});
    *handle = &g_blas.back();
    return CUBLAS_STATUS_SUCCESS;
}

namespace {
gd_emu_blas &blas_of(cublasHandle_t h, const char *call)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!h || !known(g_blas, h) || !h->live) die("%s with a handle that is not live", call);
    return *h;
}
} // namespace

cublasStatus_t cublasDestroy(cublasHandle_t handle)
{
    blas_of(handle, "cublasDestroy").live = false;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream)
{
    gd_emu_blas &h = blas_of(handle, "cublasSetStream");
    if (stream_of(stream, "cublasSetStream").device != h.device)
        die("cublasSetStream: a stream of device %d for a handle of device %d", stream->device, h.device);
    h.stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    blas_of(handle, "cublasSetMathMode").mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusName(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

const char *cublasGetStatusString(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    }
    return "unknown status";
}

namespace {

/* Each of the `batch` column-major matrices (rows, cols, leading dimension ld) lies inside an
 * allocation of the handle's device; on a GPU, reading outside them is an illegal address. */
template <class T>
void check_matrices(const char *call, const char *name, const T *p, long long rows, long long cols, long long ld,
                    long long stride, int batch, int device)
{
    if (rows == 0 || cols == 0) return;
    const size_t extent = (size_t)((cols - 1) * ld + rows) * sizeof(T);
    for (int b = 0; b < batch; b++)
        if (!device_range(p + b * stride, extent, device, call, name))
            die("%s: matrix %s of product %d reaches outside device memory", call, name, b);
}

template <class T>
cublasStatus_t gemm(const char *call, cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const T *alpha, const T *A, int lda, long long sa, const T *B, int ldb, long long sb,
                    const T *beta, T *C, int ldc, long long sc, int batch)
{
    const gd_emu_blas &h = blas_of(handle, call);
    if (!h.stream) die("%s: the handle is not bound to a stream, so it would use the legacy default stream", call);
    if (h.device != t_device)
        die("%s: a handle of device %d used while device %d is current", call, h.device, t_device);
    /* op(A) is m x k and op(B) k x n; a transposed operand is stored the other way round */
    const int ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
    const int br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
    if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < std::max(1, ar) || ldb < std::max(1, br) || ldc < std::max(1, m))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    check_matrices(call, "A", A, ar, ac, lda, sa, batch, h.device);
    check_matrices(call, "B", B, br, bc, ldb, sb, batch, h.device);
    check_matrices(call, "C", (const T *)C, m, n, ldc, sc, batch, h.device);
    for (int p = 0; p < batch; p++) {
        const T *a = A + p * sa, *b = B + p * sb;
        T *c = C + p * sc;
        for (long long j = 0; j < n; j++)
            for (long long i = 0; i < m; i++) {
                double acc = 0;
                for (long long l = 0; l < k; l++) {
                    const T x = ta == CUBLAS_OP_N ? a[i + l * lda] : a[l + i * lda];
                    const T y = tb == CUBLAS_OP_N ? b[l + j * ldb] : b[j + l * ldb];
                    acc += (double)x * (double)y;
                }
                /* beta == 0: C is not read, as in cuBLAS (it may hold NaNs) */
                const double old = *beta == 0 ? 0.0 : (double)*beta * (double)c[i + j * ldc];
                c[i + j * ldc] = (T)((double)*alpha * acc + old);
            }
    }
    return CUBLAS_STATUS_SUCCESS;
}

} // namespace

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                           float *C, int ldc)
{
    return gemm("cublasSgemm", h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}

cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const double *alpha, const double *A, int lda, const double *B, int ldb, const double *beta,
                           double *C, int ldc)
{
    return gemm("cublasDgemm", h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *A, int lda, long long sa,
                                         const float *B, int ldb, long long sb, const float *beta, float *C, int ldc,
                                         long long sc, int batch)
{
    return gemm("cublasSgemmStridedBatched", h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc,
                batch);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const double *alpha, const double *A, int lda, long long sa,
                                         const double *B, int ldb, long long sb, const double *beta, double *C,
                                         int ldc, long long sc, int batch)
{
    return gemm("cublasDgemmStridedBatched", h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc,
                batch);
}
