/* emu_kernels.cpp - running a kernel in the CUDA emulation (see emu.h): each block runs as
 * blockDim threads, one block after another: in index order, or in a shuffled order drawn
 * from a seed and the launch's number (gd_emu_set_block_order), so a kernel that needs one
 * block to run before another without anything that orders them fails as it may on a GPU,
 * where blocks run in any order and at once. A thread is a fiber with its own stack that runs
 * until it finishes or reaches a barrier (__syncthreads, or the warp barriers inside a
 * shuffle); only then does another thread run: the lowest-numbered one that can in one block,
 * the highest in the next. So a missing barrier shows up as a wrong result, and threads that
 * wait at different barriers, or exit while others wait, stop the program with a message
 * instead of passing by luck. A launch is checked when it is issued and runs when its stream
 * is waited for (emu_streams.cpp).
 */

/* Threads switch with _setjmp/_longjmp between stacks, which the fortified longjmp refuses. */
#undef _FORTIFY_SOURCE

#include "emu.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

using namespace gd_emu;

namespace {

/* ------------------------------------------------------------------------------------------
 * fibers: one per thread of the running block
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
/* Whether this host thread is running a kernel: other host threads may issue work meanwhile
 * (they wait for the emulation's lock), and only this one's calls come from inside a kernel. */
thread_local bool t_in_kernel = false;
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
        if (launches && print_statistics())
            printf("cuda_emu: %lld kernel launches, %lld blocks, %lld threads on %d emulated GPUs of %d "
                   "multiprocessors\n", launches, blocks, threads, device_count(), multiprocessors());
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

bool g_shuffle;               /* gd_emu_set_block_order */
uint64_t g_seed;
unsigned long long g_launch_keys; /* launches started: each one's key for its block order */

uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The block that runs at `position` of a launch of `blocks`: the same one in index order; else
 * a permutation of [0, blocks) chosen by the seed and the launch's key, without a table (grids
 * may be large): rounds of steps that are each one-to-one on [0, 2^bits) (multiplying by an
 * odd number, xor with a right shift, adding, all modulo 2^bits), repeated while the result
 * is past the grid (cycle walking), which maps [0, blocks) onto itself. */
unsigned long long block_at(unsigned long long position, unsigned long long blocks, unsigned long long key)
{
    if (!g_shuffle || blocks < 2) return position;
    const int bits = 64 - __builtin_clzll(blocks - 1);
    const uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
    uint64_t round_key[3], k = splitmix64(g_seed ^ splitmix64(key));
    for (uint64_t &r : round_key) r = k = splitmix64(k);
    uint64_t x = position;
    do {
        for (uint64_t r : round_key) {
            x = (x * (r | 1)) & mask;
            x ^= x >> ((bits + 1) / 2);
            x = (x + (r >> 32)) & mask;
        }
    } while (x >= blocks);
    return x;
}

} // namespace

bool gd_emu::in_kernel() { return t_in_kernel; }

long long clock64()
{
    return (long long)std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}


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

/* ------------------------------------------------------------------------------------------
 * launches
 * ---------------------------------------------------------------------------------------- */

bool gd_emu_launch_check(const gd_emu_site &site, dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream)
{
    if (in_kernel())
        die("%s:%d: %s launched from inside a kernel (not emulated)", site.file, site.line, site.kernel);
    std::lock_guard<std::recursive_mutex> guard(lock());
    const gd_emu_stream *s = stream_of(stream, site.kernel);
    if (shared_bytes != 0) die("%s:%d: %s: dynamic shared memory is not emulated", site.file, site.line, site.kernel);
    const unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535 ||
        block.x == 0 || block.y == 0 || block.z == 0 || block.x > 1024 || block.y > 1024 || block.z > 64 ||
        threads > (unsigned long long)kMaxBlockThreads) {
        fail(cudaErrorInvalidConfiguration);
        return false;
    }
    if (device_of(s) != t_device) { /* a launch goes to a stream of the current device */
        fail(cudaErrorInvalidResourceHandle);
        return false;
    }
    /* a planted launch failure (named "cudaLaunchKernel", the launch's runtime call): the kernel
     * does not run and the status waits for cudaGetLastError, as a failed launch's does */
    if (int st = injected("cudaLaunchKernel")) {
        fail((cudaError_t)st);
        return false;
    }
    return true;
}

void gd_emu_enqueue(cudaStream_t stream, std::function<bool()> work)
{
    std::lock_guard<std::recursive_mutex> guard(lock());
    enqueue_steps(stream_of(stream, "a kernel launch"), Kind::work, std::move(work));
}

extern "C" void gd_emu_set_block_order(int shuffle, unsigned long long seed)
{
    std::lock_guard<std::recursive_mutex> guard(lock());
    g_shuffle = shuffle != 0;
    g_seed = seed;
}

bool gd_emu_run(const gd_emu_site &site, dim3 grid, dim3 block, void (*thread_body)(void *), void *context,
                gd_emu_progress *progress)
{
    std::lock_guard<std::mutex> launch(g_launch_mutex);
    if (!progress->started) { /* the key is the launch's number when it first runs: one order, however often it stops */
        progress->started = true;
        progress->key = g_launch_keys++;
    }
    const unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    g_block_threads = (int)threads;
    while (g_fibers_created < g_block_threads) create_fiber(g_fibers_created++);
    for (int t = 0; t < g_block_threads; t++)
        g_fibers[t].index = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
    g_site = &site;
    g_body = thread_body;
    g_body_context = context;
    t_in_kernel = true;
    gridDim = grid;
    blockDim = block;
    const unsigned long long blocks = (unsigned long long)grid.x * grid.y * grid.z;
    bool finished = true;
    for (unsigned long long &at = progress->next_block; at < blocks; at++) {
        if (step_boundary()) { /* a Ctrl-C: the blocks run so far stay run, the rest wait */
            finished = false;
            break;
        }
        const unsigned long long b = block_at(at, blocks, progress->key);
        blockIdx = uint3{(unsigned)(b % grid.x), (unsigned)(b / grid.x % grid.y), (unsigned)(b / grid.x / grid.y)};
        run_block((progress->key + at) & 1); /* both thread orders, in every kernel */
    }
    t_in_kernel = false;
    g_body = nullptr;
    g_site = nullptr;
    if (!finished) return false;
    g_stats.launches++;
    g_stats.blocks += (long long)blocks;
    g_stats.threads += (long long)(blocks * threads);
    return true;
}
