/* emu_streams.cpp - streams and events of the CUDA emulation (see emu.h). A stream is a queue:
 * what is issued on it runs later, in order, when something waits for it, and not before. A
 * wait runs the stream up to the point waited for; a queued cudaStreamWaitEvent runs the
 * event's stream up to its record first. So two streams run in exactly the order their waits
 * force, and work that a real GPU may run concurrently runs here in the least favourable of
 * the orders a missing dependency allows: whichever stream is waited for first runs first.
 * A wait that needs a stream to get past work that waits for the waiter is a deadlock on a
 * GPU; here it stops the program with a message.
 *
 * The queues are bounded, as a GPU's is: once more operations that compute (kernels,
 * products, copies, memsets) are pending on all streams than gd_emu_set_waits allows, the
 * thread that queues one runs the oldest operations first. Bookkeeping (frees, events, stream
 * waits) queues without a bound and never makes its caller wait: a free comes from Python's
 * deallocation, which holds the GIL, and must not run work there. And a wait
 * can be interrupted: on the main thread, when a handler catches SIGINT (Python's Ctrl-C),
 * the handler runs as always and the wait stops at the next boundary between steps (blocks of
 * a kernel, columns of a product); the running operation keeps its progress and the wait
 * returns cudaErrorEmuInterrupted. A launch blocked on a full queue stops running work the
 * same way, is queued over the bound, and the bound is doubled until the queue drains, so the
 * rest of the interrupted operation's launches return at once.
 */
#undef _FORTIFY_SOURCE /* as in every file of the emulation (emu_runtime.cpp) */

#include "emu.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <thread>

#include <sys/syscall.h>
#include <unistd.h>

struct gd_emu_op {
    gd_emu::Work work;
    uint64_t ticket;    /* issue order over all streams: the oldest runs first on a full queue */
    gd_emu::Kind kind;
};

struct gd_emu_stream {
    int device;
    const char *kind;  /* for messages */
    bool live;         /* not destroyed; its queued work still runs */
    bool running;      /* one of its operations is running now */
    std::deque<gd_emu_op> queue;
    uint64_t issued;   /* operations ever queued */
    uint64_t done;     /* operations run */
};

struct gd_emu_event {
    int device;
    bool timing;      /* created without cudaEventDisableTiming */
    bool live;        /* not destroyed */
    gd_emu_stream *stream; /* of the last record, or null before the first */
    uint64_t seq;     /* the record is complete once stream->done >= seq */
    bool stamped;     /* `when` belongs to the last record (it ran) */
    std::chrono::steady_clock::time_point when;
};

using namespace gd_emu;

namespace {

std::deque<gd_emu_stream> g_streams; /* a deque never moves its elements: handles stay valid */
std::deque<gd_emu_event> g_events;
gd_emu_stream g_legacy[kMaxDevices], g_per_thread[kMaxDevices];
/* queued operations not yet run on every stream, and those of them that compute (Kind::work:
 * pending_operations, the bound); read without the lock, while another thread waits */
std::atomic<long> g_pending{0}, g_pending_work{0};
uint64_t g_tickets;

struct DefaultStreams {
    DefaultStreams()
    {
        for (int d = 0; d < kMaxDevices; d++) {
            g_legacy[d] = gd_emu_stream{d, "the legacy default stream", true, false, {}, 0, 0};
            g_per_thread[d] = gd_emu_stream{d, "the per-thread default stream", true, false, {}, 0, 0};
        }
    }
} g_default_streams;

/* Work still queued when the process ends never ran: say so, as a program that exits without
 * waiting for its GPU loses that work too. Bookkeeping (the frees of arrays that Python
 * releases while it shuts down) is not counted. */
struct LeftAtExit {
    ~LeftAtExit()
    {
        const long n = g_pending_work.load();
        if (n <= 0) return;
        fflush(stdout);
        fprintf(stderr, "cuda_emu: %ld operation%s (kernels, products, copies) still queued on emulated GPUs at exit "
                "never ran: nothing waited for %s (gd.synchronize() or reading a result waits)\n",
                n, n == 1 ? "" : "s", n == 1 ? "it" : "them");
    }
} g_left_at_exit;

template <class T> bool known(const std::deque<T> &table, const T *p)
{
    for (const T &x : table)
        if (&x == p) return true;
    return false;
}

/* ------------------------------------------------------------------------------------------
 * waits: interruptible on the main thread, and a test's hold
 * ---------------------------------------------------------------------------------------- */

long g_queue_limit = kDefaultQueue; /* 0: no bound */
bool g_bound_doubled;               /* after an interrupted launch, until the queue drains */
bool g_interruptible;               /* gd_emu_set_waits */
std::atomic<bool> g_sigint{false};  /* a SIGINT arrived during the current interruptible wait */
struct sigaction g_caught;          /* the SIGINT handler each SIGINT is passed on to */
thread_local int t_wait_depth;
thread_local bool t_interruptible;  /* this thread is in an interruptible wait */
std::atomic<long> g_hold_steps{0};  /* gd_emu_hold_after_steps */
std::atomic<bool> g_held{false};

/* Only async-signal-safe work: a lock-free store, then the caught handler, which is how
 * Python learns of the signal and raises KeyboardInterrupt once the wait has returned. */
void on_sigint(int sig, siginfo_t *info, void *context)
{
    g_sigint.store(true, std::memory_order_relaxed);
    if (g_caught.sa_flags & SA_SIGINFO) g_caught.sa_sigaction(sig, info, context);
    else g_caught.sa_handler(sig);
}

/* Python runs signal handlers on the main thread only, so only its waits stop for one. */
bool on_main_thread()
{
#ifdef SYS_gettid
    return syscall(SYS_gettid) == getpid();
#else
    return false;
#endif
}

/* While the outermost wait of the main thread runs, SIGINT goes through on_sigint first,
 * if a handler catches it (not at its default, which ends the process, nor ignored). The
 * handler is put back when the wait ends: Python may replace it between waits. */
class WaitScope {
public:
    WaitScope()
    {
        if (t_wait_depth++ > 0 || !g_interruptible || !on_main_thread()) return;
        struct sigaction now;
        if (sigaction(SIGINT, nullptr, &now) != 0) return;
        if (!(now.sa_flags & SA_SIGINFO) && (now.sa_handler == SIG_DFL || now.sa_handler == SIG_IGN)) return;
        g_caught = now;
        g_sigint.store(false);
        struct sigaction ours = now;
        ours.sa_flags = now.sa_flags | SA_SIGINFO;
        ours.sa_sigaction = on_sigint;
        t_interruptible = sigaction(SIGINT, &ours, nullptr) == 0;
    }
    ~WaitScope()
    {
        if (--t_wait_depth > 0 || !t_interruptible) return;
        sigaction(SIGINT, &g_caught, nullptr);
        t_interruptible = false;
    }
    WaitScope(const WaitScope &) = delete;
    WaitScope &operator=(const WaitScope &) = delete;
};

bool interrupted() { return t_interruptible && g_sigint.load(std::memory_order_relaxed); }

/* A test's hold: the waiting thread pauses here until a SIGINT arrives (a minute at most, so
 * a test that never sends one fails instead of hanging). */
void hold()
{
    g_held.store(true);
    for (int ms = 0; ms < 60000 && !g_sigint.load(); ms++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    g_held.store(false);
}

/* ------------------------------------------------------------------------------------------
 * running queued work
 * ---------------------------------------------------------------------------------------- */

/* Run s's oldest operation: false when it stopped part way (it stays first, with its
 * progress). Nothing queues work on s while it runs (work issues no stream operations, and
 * a wait for s from inside its own work is the cycle below). */
bool run_front(gd_emu_stream *s)
{
    if (s->running)
        die("a wait needs %s of device %d to run past work that waits for it: a cycle of "
            "cudaStreamWaitEvent (a deadlock on a GPU)",
            s->kind, s->device);
    gd_emu_op &op = s->queue.front();
    s->running = true;
    const bool finished = op.work();
    s->running = false;
    if (!finished) return false;
    if (op.kind == Kind::work) g_pending_work--;
    s->queue.pop_front();
    s->done++;
    g_pending--;
    return true;
}

/* Run s's operations until `seq` of them have run; false when interrupted first. */
bool run_until(gd_emu_stream *s, uint64_t seq)
{
    while (s->done < seq)
        if (interrupted() || !run_front(s)) return false;
    return true;
}

bool run_all(gd_emu_stream *s) { return run_until(s, s->issued); }

/* Every stream, default ones included. */
template <class F> void each_stream(F f)
{
    for (gd_emu_stream &s : g_streams) f(&s);
    for (int d = 0; d < kMaxDevices; d++) f(&g_legacy[d]), f(&g_per_thread[d]);
}

/* Run everything queued on every stream of `device` (cudaDeviceSynchronize). */
bool drain_device(int device)
{
    for (bool again = true; again;) {
        again = false;
        bool ok = true;
        each_stream([&](gd_emu_stream *s) {
            if (ok && s->device == device && s->done < s->issued) ok = run_all(s), again = true;
        });
        if (!ok) return false;
    }
    return true;
}

/* A full queue: the queuing thread runs the oldest operations (of any stream) until there is
 * room, as a GPU's launch blocks. */
void make_room()
{
    if (g_queue_limit <= 0) return;
    if (g_pending_work < g_queue_limit) g_bound_doubled = false; /* drained since an interrupt */
    const long limit = g_bound_doubled ? 2 * g_queue_limit : g_queue_limit;
    if (g_pending_work <= limit) return;
    WaitScope scope;
    while (g_pending_work > limit) {
        gd_emu_stream *oldest = nullptr;
        each_stream([&](gd_emu_stream *s) {
            if (!s->queue.empty() && (!oldest || s->queue.front().ticket < oldest->queue.front().ticket)) oldest = s;
        });
        if (!oldest) return; /* cannot be: the count is of queued operations */
        if (interrupted() || !run_front(oldest)) {
            g_bound_doubled = true; /* the operation being issued returns; Python raises after it */
            return;
        }
    }
}

gd_emu_event &event_of(cudaEvent_t e, const char *call)
{
    if (!e || !known(g_events, e) || !e->live)
        die("%s with an event that cudaEventCreate never returned or that was destroyed", call);
    return *e;
}

} // namespace

/* ------------------------------------------------------------------------------------------
 * what the other files use
 * ---------------------------------------------------------------------------------------- */

gd_emu_stream *gd_emu::stream_of(cudaStream_t s, const char *call)
{
    if (!s) die("%s on the null (legacy default) stream: gpudev's backend must use its per-device streams", call);
    if (s == cudaStreamLegacy) return &g_legacy[t_device];
    if (s == cudaStreamPerThread) return &g_per_thread[t_device];
    if (!known(g_streams, s)) die("%s on a stream cudaStreamCreateWithFlags never returned", call);
    if (!s->live) die("%s on a destroyed stream", call);
    return s;
}

int gd_emu::device_of(const gd_emu_stream *s) { return s->device; }

void gd_emu::enqueue_steps(gd_emu_stream *s, Kind kind, Work work)
{
    if (in_kernel()) die("a stream operation issued from inside a kernel (not emulated)");
    create_context(s->device); /* work on a device needs its context */
    s->queue.push_back(gd_emu_op{std::move(work), ++g_tickets, kind});
    s->issued++;
    g_pending++;
    if (kind == Kind::work) g_pending_work++;
    /* after queuing, so the caller's records are complete; the new operation is the youngest,
     * and the limit is at least 1, so it is never the one run here */
    if (kind == Kind::work) make_room();
}

void gd_emu::enqueue(gd_emu_stream *s, Kind kind, std::function<void()> work)
{
    enqueue_steps(s, kind, [work = std::move(work)] {
        work();
        return true;
    });
}

bool gd_emu::wait_for_stream(gd_emu_stream *s)
{
    WaitScope scope;
    return run_all(s);
}

bool gd_emu::step_boundary()
{
    if (!t_interruptible) return false;
    if (g_hold_steps.load() > 0 && --g_hold_steps == 0) hold();
    return interrupted();
}

extern "C" long gd_emu_pending_operations(void) { return g_pending_work.load(); }

extern "C" void gd_emu_set_waits(long queue, int interruptible)
{
    std::lock_guard<std::recursive_mutex> guard(lock());
    g_queue_limit = queue > 0 ? queue : 0;
    g_interruptible = interruptible != 0;
}

extern "C" void gd_emu_hold_after_steps(long steps) { g_hold_steps.store(steps > 0 ? steps : 0); }

extern "C" int gd_emu_held(void) { return g_held.load() ? 1 : 0; }

/* ------------------------------------------------------------------------------------------
 * runtime API: streams
 * ---------------------------------------------------------------------------------------- */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags)
{
    if (!(flags & cudaStreamNonBlocking))
        die("cudaStreamCreateWithFlags without cudaStreamNonBlocking: gpudev's streams never wait for the legacy "
            "default stream");
    std::lock_guard<std::recursive_mutex> guard(lock());
    create_context(t_device);
    g_streams.push_back(gd_emu_stream{t_device, "a stream", true, false, {}, 0, 0});
    *stream = &g_streams.back();
    return cudaSuccess;
}

/* As in CUDA: returns at once; work already queued still runs when waited for. */
cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    std::lock_guard<std::recursive_mutex> guard(lock());
    gd_emu_stream *s = stream_of(stream, "cudaStreamDestroy");
    if (s == &g_legacy[s->device] || s == &g_per_thread[s->device]) return fail(cudaErrorInvalidResourceHandle);
    s->live = false;
    return cudaSuccess;
}

/* The waits: the scope is entered before the lock is taken, so a Ctrl-C that arrives while
 * another thread holds it stops this wait as soon as it has the lock. */
cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    WaitScope scope;
    std::lock_guard<std::recursive_mutex> guard(lock());
    gd_emu_stream *s = stream_of(stream, "cudaStreamSynchronize");
    if (!run_all(s)) return cudaErrorEmuInterrupted;
    release_over_threshold(s->device);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    WaitScope scope;
    std::lock_guard<std::recursive_mutex> guard(lock());
    if (!drain_device(t_device)) return cudaErrorEmuInterrupted;
    release_over_threshold(t_device);
    return cudaSuccess;
}

/* ------------------------------------------------------------------------------------------
 * runtime API: events
 * ---------------------------------------------------------------------------------------- */

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags)
{
    std::lock_guard<std::recursive_mutex> guard(lock());
    g_events.push_back(gd_emu_event{t_device, !(flags & cudaEventDisableTiming), true, nullptr, 0, false, {}});
    *event = &g_events.back();
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) { return cudaEventCreateWithFlags(event, 0); }

/* The event and the stream must belong to the same device (CUDA refuses otherwise). The
 * record's time is taken when it runs. */
/* A handle another library gave gpudev (a DLPack consumer's stream=) that names no stream:
 * CUDA's answer for a bad handle, an error, not the stop that gpudev's own misuse gets. */
static bool foreign_unknown(cudaStream_t s)
{
    return s && s != cudaStreamLegacy && s != cudaStreamPerThread && !known(g_streams, s);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    std::lock_guard<std::recursive_mutex> guard(lock());
    if (foreign_unknown(stream)) return fail(cudaErrorInvalidResourceHandle);
    gd_emu_event &e = event_of(event, "cudaEventRecord");
    gd_emu_stream *s = stream_of(stream, "cudaEventRecord");
    if (e.device != s->device) return fail(cudaErrorInvalidResourceHandle);
    enqueue(s, Kind::bookkeeping, [&e, seq = s->issued + 1] {
        if (e.seq == seq) { /* still the event's latest record */
            e.when = std::chrono::steady_clock::now();
            e.stamped = true;
        }
    });
    e.stream = s;
    e.seq = s->issued;
    e.stamped = false;
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    WaitScope scope;
    std::lock_guard<std::recursive_mutex> guard(lock());
    gd_emu_event &e = event_of(event, "cudaEventSynchronize");
    if (e.stream) {
        if (!run_until(e.stream, e.seq)) return cudaErrorEmuInterrupted;
        release_over_threshold(e.stream->device);
    }
    return cudaSuccess;
}

/* As CUDA: both events recorded and complete, both with timing, on one device. */
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    std::lock_guard<std::recursive_mutex> guard(lock());
    const gd_emu_event &a = event_of(start, "cudaEventElapsedTime"), &b = event_of(end, "cudaEventElapsedTime");
    if (!a.stream || !b.stream || !a.timing || !b.timing || a.device != b.device)
        return fail(cudaErrorInvalidResourceHandle);
    if (!a.stamped || !b.stamped) return fail(cudaErrorNotReady);
    *ms = std::chrono::duration<float, std::milli>(b.when - a.when).count();
    return cudaSuccess;
}

/* As in CUDA, a record still queued keeps its place: waits already issued on it hold. */
cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    std::lock_guard<std::recursive_mutex> guard(lock());
    event_of(event, "cudaEventDestroy").live = false;
    return cudaSuccess;
}

/* Work queued on `stream` after this waits for the event's latest record as of now (on any
 * device); an event never recorded is complete. */
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags)
{
    std::lock_guard<std::recursive_mutex> guard(lock());
    if (foreign_unknown(stream)) return fail(cudaErrorInvalidResourceHandle);
    gd_emu_stream *s = stream_of(stream, "cudaStreamWaitEvent");
    const gd_emu_event &e = event_of(event, "cudaStreamWaitEvent");
    if (flags != 0) return fail(cudaErrorInvalidValue);
    if (skipped("cudaStreamWaitEvent")) return cudaSuccess; /* a test removing one wait */
    if (e.stream && e.stream != s)
        enqueue_steps(s, Kind::bookkeeping, [other = e.stream, seq = e.seq] { return run_until(other, seq); });
    return cudaSuccess;
}
