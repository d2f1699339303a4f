/* emu_streams.cpp - streams and events of the CUDA emulation (see emu.h). A stream is a queue:
 * what is issued on it runs later, in order, when something waits for it, and not before. A
 * wait runs the stream up to the point waited for; a queued cudaStreamWaitEvent runs the
 * event's stream up to its record first. So two streams run in exactly the order their waits
 * force, and work that a real GPU may run concurrently runs here in the least favourable of
 * the orders a missing dependency allows: whichever stream is waited for first runs first.
 * A wait that needs a stream to get past work that waits for the waiter is a deadlock on a
 * GPU; here it stops the program with a message.
 */
#undef _FORTIFY_SOURCE /* as in every file of the emulation (emu_runtime.cpp) */

#include "emu.h"

#include <cstdio>

struct gd_emu_stream {
    int device;
    const char *kind;  /* for messages */
    bool live;         /* not destroyed; its queued work still runs */
    bool running;      /* one of its operations is running now */
    std::deque<std::function<void()>> queue;
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
long g_pending;                      /* queued operations not yet run, on every stream */

struct DefaultStreams {
    DefaultStreams()
    {
        for (int d = 0; d < kMaxDevices; d++) {
            g_legacy[d] = gd_emu_stream{d, "the legacy default stream", true, false, {}, 0, 0};
            g_per_thread[d] = gd_emu_stream{d, "the per-thread default stream", true, false, {}, 0, 0};
        }
    }
} g_default_streams;

template <class T> bool known(const std::deque<T> &table, const T *p)
{
    for (const T &x : table)
        if (&x == p) return true;
    return false;
}

/* Run s's operations until `seq` of them have run. */
void run_until(gd_emu_stream *s, uint64_t seq)
{
    while (s->done < seq) {
        if (s->running)
            die("a wait needs %s of device %d to run past work that waits for it: a cycle of "
                "cudaStreamWaitEvent (a deadlock on a GPU)",
                s->kind, s->device);
        std::function<void()> work = std::move(s->queue.front());
        s->queue.pop_front();
        s->running = true;
        work();
        s->running = false;
        s->done++;
        g_pending--;
    }
}

void run_all(gd_emu_stream *s) { run_until(s, s->issued); }

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

void gd_emu::enqueue(gd_emu_stream *s, std::function<void()> work)
{
    if (in_kernel()) die("a stream operation issued from inside a kernel (not emulated)");
    create_context(s->device); /* work on a device needs its context */
    s->queue.push_back(std::move(work));
    s->issued++;
    g_pending++;
}

void gd_emu::drain_device(int device)
{
    for (bool again = true; again;) {
        again = false;
        for (gd_emu_stream &s : g_streams)
            if (s.device == device && s.done < s.issued) run_all(&s), again = true;
        for (gd_emu_stream *s : {&g_legacy[device], &g_per_thread[device]})
            if (s->done < s->issued) run_all(s), again = true;
    }
}

extern "C" long gd_emu_pending_operations(void)
{
    std::lock_guard<std::recursive_mutex> guard(lock());
    return g_pending;
}

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

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    std::lock_guard<std::recursive_mutex> guard(lock());
    gd_emu_stream *s = stream_of(stream, "cudaStreamSynchronize");
    run_all(s);
    release_over_threshold(s->device);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    std::lock_guard<std::recursive_mutex> guard(lock());
    drain_device(t_device);
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
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    std::lock_guard<std::recursive_mutex> guard(lock());
    gd_emu_event &e = event_of(event, "cudaEventRecord");
    gd_emu_stream *s = stream_of(stream, "cudaEventRecord");
    if (e.device != s->device) return fail(cudaErrorInvalidResourceHandle);
    enqueue(s, [&e, seq = s->issued + 1] {
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
    std::lock_guard<std::recursive_mutex> guard(lock());
    gd_emu_event &e = event_of(event, "cudaEventSynchronize");
    if (e.stream) {
        run_until(e.stream, e.seq);
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
    gd_emu_stream *s = stream_of(stream, "cudaStreamWaitEvent");
    const gd_emu_event &e = event_of(event, "cudaStreamWaitEvent");
    if (flags != 0) return fail(cudaErrorInvalidValue);
    if (skipped("cudaStreamWaitEvent")) return cudaSuccess; /* a test removing one wait */
    if (e.stream && e.stream != s) enqueue(s, [other = e.stream, seq = e.seq] { run_until(other, seq); });
    return cudaSuccess;
}
