/* conformance_services.c - the optional device-service entries of gd_backend (memory_stats,
 * reset_peak_memory, empty_cache, device_props, synchronize_all, the events, pinned memory and
 * its copies), each checked against gpudev.h's contract when the backend fills it; one line
 * names those it leaves NULL.
 * --self-test runs the same checks on a small fake table, once correct and once per planted
 * bug, to show that they pass a correct implementation and catch each broken one.
 */
#include "conformance.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------
 * memory statistics
 * ---------------------------------------------------------------------------------------- */

static int stats(gd_memory_stats *s, int device)
{
    memset(s, 0, sizeof *s);
    return OK(gdt_be->memory_stats(s, device, &gdt_err));
}

/* A device nothing has touched reports zeros: run before any other section. */
void gdt_check_fresh_device(void)
{
    if (!gdt_be->memory_stats) return;
    for (int d = 0; d < gdt_be->device_count(); d++) {
        gd_memory_stats s;
        if (stats(&s, d))
            CHECK(s.allocated_bytes == 0 && s.reserved_bytes == 0 && s.peak_allocated_bytes == 0 && s.allocations == 0,
                  "device %d before any use: allocated %lld reserved %lld peak %lld allocations %lld, expected zeros",
                  d, (long long)s.allocated_bytes, (long long)s.reserved_bytes, (long long)s.peak_allocated_bytes,
                  (long long)s.allocations);
    }
}

static void check_consistent(const gd_memory_stats *s, const char *when)
{
    CHECK(s->allocated_bytes >= 0 && s->allocations >= 0 && s->reserved_bytes >= s->allocated_bytes &&
              s->peak_allocated_bytes >= s->allocated_bytes,
          "%s: allocated %lld, reserved %lld, peak %lld, allocations %lld (reserved and peak must be >= allocated)",
          when, (long long)s->allocated_bytes, (long long)s->reserved_bytes, (long long)s->peak_allocated_bytes,
          (long long)s->allocations);
}

/* Allocations and frees are counted exactly; the peak stays at its high-water mark. */
static void check_memory_stats(void)
{
    static const size_t sizes[] = {1, 1000, ((size_t)4 << 20) + 3};
    enum { N = sizeof sizes / sizeof sizes[0] };
    gd_memory_stats s0, s1, s2, s3;
    if (!stats(&s0, gdt_dev)) return;
    check_consistent(&s0, "before");
    void *p[N];
    int64_t total = 0;
    for (int i = 0; i < N; i++) p[i] = gdt_alloc(sizes[i]), total += (int64_t)sizes[i];
    stats(&s1, gdt_dev);
    check_consistent(&s1, "with 3 more blocks");
    CHECK(s1.allocated_bytes - s0.allocated_bytes == total && s1.allocations - s0.allocations == N,
          "after allocating %lld bytes in %d blocks: allocated grew by %lld, allocations by %lld", (long long)total, N,
          (long long)(s1.allocated_bytes - s0.allocated_bytes), (long long)(s1.allocations - s0.allocations));
    for (int i = 0; i < N; i++) gdt_free(p[i], sizes[i]);
    stats(&s2, gdt_dev);
    check_consistent(&s2, "after freeing them");
    CHECK(s2.allocated_bytes == s0.allocated_bytes && s2.allocations == s0.allocations,
          "after freeing everything: allocated %lld (was %lld), allocations %lld (was %lld)",
          (long long)s2.allocated_bytes, (long long)s0.allocated_bytes, (long long)s2.allocations,
          (long long)s0.allocations);
    CHECK(s2.peak_allocated_bytes == s1.peak_allocated_bytes && s1.peak_allocated_bytes >= s0.allocated_bytes + total,
          "peak %lld with the blocks, %lld after freeing them (it must hold its high-water mark)",
          (long long)s1.peak_allocated_bytes, (long long)s2.peak_allocated_bytes);
    void *z = gdt_alloc(0);
    gdt_free(z, 0);
    stats(&s3, gdt_dev);
    CHECK(s3.allocated_bytes == s2.allocated_bytes && s3.allocations == s2.allocations,
          "alloc and free of 0 bytes left allocated %lld -> %lld, allocations %lld -> %lld",
          (long long)s2.allocated_bytes, (long long)s3.allocated_bytes, (long long)s2.allocations,
          (long long)s3.allocations);
}

static void check_reset_peak(void)
{
    gd_memory_stats s;
    void *big = gdt_alloc((size_t)1 << 20);
    gdt_free(big, (size_t)1 << 20);
    gdt_be->reset_peak_memory(gdt_dev);
    stats(&s, gdt_dev);
    CHECK(s.peak_allocated_bytes == s.allocated_bytes, "after reset_peak_memory: peak %lld, allocated %lld",
          (long long)s.peak_allocated_bytes, (long long)s.allocated_bytes);
    int64_t base = s.allocated_bytes;
    void *small = gdt_alloc(1000);
    gdt_free(small, 1000);
    stats(&s, gdt_dev);
    CHECK(s.peak_allocated_bytes == base + 1000, "peak %lld after a 1000-byte block on top of %lld since the reset",
          (long long)s.peak_allocated_bytes, (long long)base);
}

/* empty_cache gives back only what no array holds: a live block keeps its bytes. */
static void check_empty_cache(void)
{
    static const int64_t data[4] = {1, -2, 3, INT64_MIN};
    void *live = gdt_upload_new(data, sizeof data);
    void *dead = gdt_alloc((size_t)8 << 20);
    gdt_free(dead, (size_t)8 << 20);
    gd_memory_stats before, after;
    if (gdt_be->memory_stats) stats(&before, gdt_dev);
    OK(gdt_be->empty_cache(gdt_dev, &gdt_err));
    if (gdt_be->memory_stats) {
        stats(&after, gdt_dev);
        check_consistent(&after, "after empty_cache");
        CHECK(after.allocated_bytes == before.allocated_bytes && after.allocations == before.allocations,
              "empty_cache changed allocated %lld -> %lld", (long long)before.allocated_bytes,
              (long long)after.allocated_bytes);
    }
    EXPECT(live, GD_INT64, 4, data, GDT_EXACT, "a live block after empty_cache");
    gdt_free(live, sizeof data);
}

/* ------------------------------------------------------------------------------------------
 * properties, synchronize_all, events
 * ---------------------------------------------------------------------------------------- */

static void check_device_props(void)
{
    gd_device_props p;
    memset(&p, 0x7f, sizeof p); /* garbage: every field must be written */
    if (!OK(gdt_be->device_props(&p, gdt_dev, &gdt_err))) return;
    CHECK(memchr(p.name, 0, sizeof p.name) != NULL && p.name[0] != '\0', "device name is empty or not terminated");
    CHECK(p.cc_major >= 1 && p.cc_major < 100 && p.cc_minor >= 0 && p.cc_minor < 100, "compute capability %d.%d",
          p.cc_major, p.cc_minor);
    CHECK(p.multiprocessors >= 1 && p.multiprocessors < 100000, "multiprocessors %d", p.multiprocessors);
    CHECK(p.total_memory > 0 && p.free_memory >= 0 && p.free_memory <= p.total_memory,
          "memory: %lld free of %lld", (long long)p.free_memory, (long long)p.total_memory);
    CHECK(p.clock_rate_khz >= 0 && p.memory_clock_rate_khz >= 0 && p.memory_bus_width >= 0 && p.l2_cache_bytes >= 0 &&
              p.clock_rate_khz < 100000000 && p.memory_bus_width < 100000,
          "clock %d kHz, memory clock %d kHz, bus %d bits, L2 %lld bytes", p.clock_rate_khz, p.memory_clock_rate_khz,
          p.memory_bus_width, (long long)p.l2_cache_bytes);
    CHECK(p.driver_version >= 0 && p.runtime_version >= 0 && p.driver_version < 1000000 &&
              p.runtime_version < 1000000,
          "driver version %d, runtime version %d", p.driver_version, p.runtime_version);
    if (!gdt_quiet)
        printf("  device %d: %.64s, compute capability %d.%d, %d multiprocessors, %lld MiB\n", gdt_dev, p.name,
               p.cc_major, p.cc_minor, p.multiprocessors, (long long)(p.total_memory >> 20));
}

/* Three events around queued work: every interval is >= 0 and they add up in order. */
static void check_events(void)
{
    void *ev[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++)
        if (!OK(gdt_be->event_create(&ev[i], gdt_dev, &gdt_err))) goto done;
    const int64_t n = (int64_t)4 << 20;
    void *buf = gdt_alloc((size_t)n * 4);
    gd_ewise ew = {.ndim = 1, .contiguous = 1, .size = n, .shape = {n}};
    gd_operand one;
    memset(&one, 0, sizeof one);
    one.scalar.f = 1.0;
    OK(gdt_be->event_record(ev[0], gdt_dev, &gdt_err));
    OK(gdt_be->unary(buf, GD_COPY, GD_FLOAT32, &ew, &one, gdt_dev, &gdt_err));
    OK(gdt_be->event_record(ev[1], gdt_dev, &gdt_err));
    OK(gdt_be->unary(buf, GD_COPY, GD_FLOAT32, &ew, &one, gdt_dev, &gdt_err));
    OK(gdt_be->event_record(ev[2], gdt_dev, &gdt_err));
    double first = NAN, second = NAN, whole = NAN, back = NAN;
    OK(gdt_be->event_elapsed_ms(&first, ev[0], ev[1], gdt_dev, &gdt_err));
    OK(gdt_be->event_elapsed_ms(&second, ev[1], ev[2], gdt_dev, &gdt_err));
    OK(gdt_be->event_elapsed_ms(&whole, ev[0], ev[2], gdt_dev, &gdt_err));
    OK(gdt_be->event_elapsed_ms(&back, ev[2], ev[0], gdt_dev, &gdt_err));
    CHECK(first >= 0 && second >= 0 && whole >= first && whole >= second && whole < 60e3,
          "event intervals: start->mid %g ms, mid->end %g ms, start->end %g ms", first, second, whole);
    CHECK(back <= 0 && fabs(back + whole) <= 1e-3 + 1e-6 * whole, "end->start %g ms for start->end %g ms", back,
          whole);
    gdt_free(buf, (size_t)n * 4);
done:
    for (int i = 0; i < 3; i++)
        if (ev[i]) gdt_be->event_destroy(ev[i], gdt_dev);
}

/* Pinned memory to the device and back with copies that return at once: each copy's event,
 * waited for, means its bytes arrived; the host buffers are written only after those waits. */
static void check_pinned_copies(void)
{
    const size_t n = (size_t)1 << 20; /* floats */
    float *in = NULL, *out = NULL, *empty = NULL;
    void *event = NULL, *dev = gdt_alloc(n * sizeof(float));
    if (!OK(gdt_be->host_alloc((void **)&in, gdt_dev, n * sizeof(float), &gdt_err)) ||
        !OK(gdt_be->host_alloc((void **)&out, gdt_dev, n * sizeof(float), &gdt_err)) ||
        !OK(gdt_be->host_alloc((void **)&empty, gdt_dev, 0, &gdt_err)) ||
        !OK(gdt_be->event_create(&event, gdt_dev, &gdt_err)))
        goto done;
    CHECK(empty != NULL, "host_alloc of 0 bytes gave NULL");
    for (size_t i = 0; i < n; i++) in[i] = (float)i;
    memset(out, 0, n * sizeof(float));
    OK(gdt_be->copy_async(dev, in, 0, gdt_dev, n * sizeof(float), event, &gdt_err));
    OK(gdt_be->event_synchronize(event, gdt_dev, &gdt_err));
    for (size_t i = 0; i < n; i++) in[i] = -1.0f; /* the copy has read it */
    OK(gdt_be->copy_async(out, dev, 1, gdt_dev, n * sizeof(float), event, &gdt_err));
    OK(gdt_be->event_synchronize(event, gdt_dev, &gdt_err));
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
        if (out[i] != (float)i) bad = i;
    CHECK(bad == n, "pinned -> device -> pinned: element %zu is %g, expected %g", bad, bad < n ? out[bad] : 0.0,
          (double)bad);
    OK(gdt_be->copy_async(out, dev, 1, gdt_dev, 0, event, &gdt_err)); /* nothing to copy: only the event */
    OK(gdt_be->event_synchronize(event, gdt_dev, &gdt_err));
done:
    if (event) gdt_be->event_destroy(event, gdt_dev);
    gdt_be->host_free(in, gdt_dev, n * sizeof(float));
    gdt_be->host_free(out, gdt_dev, n * sizeof(float));
    gdt_be->host_free(empty, gdt_dev, 0);
    gdt_be->host_free(NULL, gdt_dev, 0);
    gdt_free(dev, n * sizeof(float));
}

void gdt_check_services(void)
{
    const gd_backend *b = gdt_be;
    char missing[256] = "";
    const struct {
        const char *name;
        int present;
    } entries[] = {
        {"memory_stats", b->memory_stats != NULL},       {"reset_peak_memory", b->reset_peak_memory != NULL},
        {"empty_cache", b->empty_cache != NULL},         {"device_props", b->device_props != NULL},
        {"synchronize_all", b->synchronize_all != NULL}, {"event_create", b->event_create != NULL},
        {"event_record", b->event_record != NULL},       {"event_elapsed_ms", b->event_elapsed_ms != NULL},
        {"event_destroy", b->event_destroy != NULL},     {"host_alloc", b->host_alloc != NULL},
        {"host_free", b->host_free != NULL},             {"copy_async", b->copy_async != NULL},
        {"event_synchronize", b->event_synchronize != NULL},
    };
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        if (!entries[i].present) strcat(strcat(missing, " "), entries[i].name);

    if (b->memory_stats) check_memory_stats();
    if (b->memory_stats && b->reset_peak_memory) check_reset_peak();
    if (b->empty_cache) check_empty_cache();
    if (b->device_props) check_device_props();
    if (b->synchronize_all) OK(b->synchronize_all(gdt_dev, &gdt_err));
    int events = b->event_create && b->event_record && b->event_elapsed_ms && b->event_destroy;
    if (events) check_events();
    int pinned = b->host_alloc && b->host_free && b->copy_async && b->event_synchronize;
    if (pinned && events) check_pinned_copies();
    if (gdt_quiet) return;
    if (missing[0]) printf("  NULL in the %s table, so not checked:%s\n", b->name, missing);
    if (b->reset_peak_memory && !b->memory_stats) printf("  reset_peak_memory not checked: memory_stats is NULL\n");
    if (!events && (b->event_create || b->event_record || b->event_elapsed_ms || b->event_destroy))
        printf("  events not checked: the four event entries are not all set\n");
    if (!(pinned && events) && (b->host_alloc || b->host_free || b->copy_async || b->event_synchronize))
        printf("  pinned copies not checked: they need the four pinned entries and the events\n");
}

/* ------------------------------------------------------------------------------------------
 * --self-test: a fake backend, correct or with one planted bug
 * ---------------------------------------------------------------------------------------- */

enum fake_bug {
    BUG_NONE, BUG_FREE_NOT_COUNTED, BUG_ALLOCATIONS_NOT_COUNTED, BUG_PEAK_DROPS_ON_FREE, BUG_RESET_IGNORED,
    BUG_RESERVED_BELOW_ALLOCATED, BUG_NOT_FRESH, BUG_EMPTY_CACHE_FAILS, BUG_EMPTY_CACHE_FREES_LIVE,
    BUG_PROPS_NO_NAME, BUG_PROPS_FREE_ABOVE_TOTAL, BUG_SYNC_ALL_FAILS, BUG_ELAPSED_REVERSED,
    BUG_RECORD_FAILS, BUG_ELAPSED_NAN, NUM_BUGS
};
static const char *const bug_names[NUM_BUGS] = {
    "none", "free not counted", "allocations not counted", "peak drops on free", "reset_peak_memory ignored",
    "reserved below allocated", "untouched device not zero", "empty_cache fails", "empty_cache frees live blocks",
    "device_props without a name", "device_props free > total", "synchronize_all fails",
    "event_elapsed_ms reversed", "event_record fails", "event_elapsed_ms NaN",
};

static enum fake_bug g_bug;
static gd_memory_stats g_fake;
static unsigned char *g_live[8]; /* what empty_cache may wrongly clobber */
static size_t g_live_bytes[8];

static int fake_count(void) { return 1; }
static int fake_sync(int device, gd_error *err) { return (void)device, (void)err, GD_OK; }
static int fake_alloc(void **out, int device, size_t nbytes, gd_error *err)
{
    (void)device;
    if (nbytes > ((size_t)1 << 40)) return gd_set_error(err, GD_ERR_HOST_OOM, "fake: out of memory");
    *out = malloc(nbytes ? nbytes : 1);
    for (int i = 0; i < 8; i++)
        if (!g_live[i]) {
            g_live[i] = *out, g_live_bytes[i] = nbytes;
            break;
        }
    g_fake.allocated_bytes += (int64_t)nbytes;
    g_fake.reserved_bytes += (int64_t)nbytes + (g_bug == BUG_RESERVED_BELOW_ALLOCATED ? -1 : 64);
    g_fake.allocations += g_bug != BUG_ALLOCATIONS_NOT_COUNTED;
    if (g_fake.allocated_bytes > g_fake.peak_allocated_bytes) g_fake.peak_allocated_bytes = g_fake.allocated_bytes;
    return GD_OK;
}
static void fake_free(void *ptr, int device, size_t nbytes)
{
    (void)device;
    if (!ptr) return;
    for (int i = 0; i < 8; i++)
        if (g_live[i] == ptr) g_live[i] = NULL;
    free(ptr);
    if (g_bug == BUG_FREE_NOT_COUNTED) return;
    g_fake.allocated_bytes -= (int64_t)nbytes;
    g_fake.reserved_bytes -= (int64_t)nbytes + (g_bug == BUG_RESERVED_BELOW_ALLOCATED ? -1 : 64);
    g_fake.allocations -= g_bug != BUG_ALLOCATIONS_NOT_COUNTED;
    if (g_bug == BUG_PEAK_DROPS_ON_FREE) g_fake.peak_allocated_bytes = g_fake.allocated_bytes;
}
static int fake_from_host(void *dst, int device, const void *src, size_t n, gd_error *err)
{
    return (void)device, (void)err, memcpy(dst, src, n), GD_OK;
}
static int fake_to_host(void *dst, const void *src, int device, size_t n, gd_error *err)
{
    return (void)device, (void)err, memcpy(dst, src, n), GD_OK;
}
static int fake_unary(void *out, gd_unop op, gd_dtype dtype, const gd_ewise *ew, const gd_operand *a, int device,
                      gd_error *err)
{
    (void)device;
    if (op != GD_COPY || dtype != GD_FLOAT32 || a->data) return gd_set_error(err, GD_ERR_UNSUPPORTED, "fake: no");
    for (int64_t i = 0; i < ew->size; i++) ((float *)out)[i] = (float)a->scalar.f;
    return GD_OK;
}
static int fake_stats(gd_memory_stats *out, int device, gd_error *err)
{
    (void)device, (void)err;
    *out = g_fake;
    if (g_bug == BUG_NOT_FRESH) out->allocations += 1;
    return GD_OK;
}
static void fake_reset_peak(int device)
{
    (void)device;
    if (g_bug != BUG_RESET_IGNORED) g_fake.peak_allocated_bytes = g_fake.allocated_bytes;
}
static int fake_empty_cache(int device, gd_error *err)
{
    (void)device;
    if (g_bug == BUG_EMPTY_CACHE_FAILS) return gd_set_error(err, GD_ERR_CUDA, "fake: empty_cache failed");
    if (g_bug == BUG_EMPTY_CACHE_FREES_LIVE)
        for (int i = 0; i < 8; i++)
            if (g_live[i]) memset(g_live[i], 0, g_live_bytes[i]);
    return GD_OK;
}
static int fake_props(gd_device_props *out, int device, gd_error *err)
{
    (void)device, (void)err;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", g_bug == BUG_PROPS_NO_NAME ? "" : "fake GPU");
    out->cc_major = 9, out->multiprocessors = 2, out->clock_rate_khz = 1000000, out->memory_bus_width = 64;
    out->total_memory = (int64_t)1 << 30;
    out->free_memory = g_bug == BUG_PROPS_FREE_ABOVE_TOTAL ? (int64_t)1 << 31 : (int64_t)1 << 29;
    out->runtime_version = 13000;
    return GD_OK;
}
static int fake_sync_all(int device, gd_error *err)
{
    (void)device;
    return g_bug == BUG_SYNC_ALL_FAILS ? gd_set_error(err, GD_ERR_CUDA, "fake: sync failed") : GD_OK;
}
static int fake_event_create(void **out, int device, gd_error *err)
{
    (void)device, (void)err;
    *out = calloc(1, sizeof(double));
    return GD_OK;
}
static int fake_event_record(void *event, int device, gd_error *err)
{
    (void)device;
    if (g_bug == BUG_RECORD_FAILS) return gd_set_error(err, GD_ERR_CUDA, "fake: record failed");
    *(double *)event = gdt_now();
    return GD_OK;
}
static int fake_elapsed(double *out, void *start, void *end, int device, gd_error *err)
{
    (void)device, (void)err;
    double ms = (*(double *)end - *(double *)start) * 1e3;
    *out = g_bug == BUG_ELAPSED_NAN ? NAN : g_bug == BUG_ELAPSED_REVERSED ? -ms : ms;
    return GD_OK;
}
static void fake_event_destroy(void *event, int device) { (void)device, free(event); }

static const gd_backend fake_backend = {
    .abi_version = GD_BACKEND_ABI_VERSION, .name = "fake", .device_count = fake_count, .synchronize = fake_sync,
    .alloc = fake_alloc, .free = fake_free, .copy_from_host = fake_from_host, .copy_to_host = fake_to_host,
    .unary = fake_unary, .memory_stats = fake_stats, .reset_peak_memory = fake_reset_peak,
    .empty_cache = fake_empty_cache, .device_props = fake_props, .synchronize_all = fake_sync_all,
    .event_create = fake_event_create, .event_record = fake_event_record, .event_elapsed_ms = fake_elapsed,
    .event_destroy = fake_event_destroy,
};

/* The comparisons under every EXPECT can fail, too. */
static int self_test_comparisons(void)
{
    const gdt_tol one_ulp = {1, 0, NULL};
    int wrong = 0;
    wrong += !gdt_close(0.1f, 0.1, GD_FLOAT32, GDT_EXACT, 0);           /* float32 of the reference */
    wrong += gdt_close(nextafter(1.0, 2.0), 1.0, GD_FLOAT64, GDT_EXACT, 0);
    wrong += !gdt_close(nextafter(1.0, 2.0), 1.0, GD_FLOAT64, one_ulp, 0);
    wrong += gdt_close(1.0 + 0x1p-21, 1.0, GD_FLOAT32, one_ulp, 0);     /* 4 float32 ulps */
    wrong += !gdt_close(NAN, NAN, GD_FLOAT32, GDT_EXACT, 0) + gdt_close(NAN, 1.0, GD_FLOAT64, one_ulp, 0);
    wrong += gdt_close(1.0, NAN, GD_FLOAT64, one_ulp, 0) + gdt_close(INFINITY, 1e308, GD_FLOAT64, one_ulp, 0);
    wrong += !gdt_close(-0.0, 0.0, GD_FLOAT64, GDT_EXACT, 0) + gdt_close(-INFINITY, INFINITY, GD_FLOAT32, one_ulp, 0);
    wrong += gdt_close(0x1p-149, 0, GD_FLOAT64, GDT_EXACT, 0);
    printf("self-test: comparisons %s\n", wrong ? "WRONG" : "ok");
    return wrong != 0;
}

int gdt_self_test(void)
{
    const gd_backend *saved = gdt_be;
    int saved_dev = gdt_dev, wrong = self_test_comparisons();
    for (int bug = 0; bug < NUM_BUGS; bug++) {
        g_bug = (enum fake_bug)bug;
        memset(&g_fake, 0, sizeof g_fake);
        memset(g_live, 0, sizeof g_live);
        gdt_be = &fake_backend, gdt_dev = 0, gdt_quiet = 1;
        long failures = gdt_failures, checks = gdt_checks;
        gdt_check_fresh_device();
        gdt_check_services();
        long failed = gdt_failures - failures;
        gdt_quiet = 0;
        int right = bug == BUG_NONE ? failed == 0 : failed > 0;
        wrong += !right;
        printf("self-test: fake table, bug '%s': %ld of %ld service checks failed: %s\n", bug_names[bug], failed,
               gdt_checks - checks, right ? "as it should" : "WRONG");
    }
    gdt_be = saved, gdt_dev = saved_dev;
    printf("self-test: %s\n", wrong ? "FAILED" : "ok");
    return wrong;
}
