/* target_cuda.c - the CUDA backend (csrc/cuda) as the conformance test's target, for a real
 * GPU or, built with GDT_EMULATED defined, for the CPU emulation in tools/cuda_emu. Its own
 * checks: device indices the machine does not have are refused; memory exported to another
 * library's stream is ordered both ways (export and release); allocations come from gpudev's
 * own pool, which keeps little after a synchronization; the thread's current device survives
 * every call; reduction scratch is counted; TF32 switches on and off again. Built for the
 * emulation it also checks what only the emulation can stage: cuBLAS handle creation on a
 * full device, a stale error left by a failed cuBLAS call, a device that cannot be entered
 * while freeing, and that the stream ordering checks do fail when the ordering calls are
 * left out.
 */
#include "conformance.h"
#include "cuda_probe.h"

#include <stdio.h>
#include <string.h>

#ifdef GDT_EMULATED
#include "gd_emu.h"
#define EMULATED 1
#else
#define EMULATED 0
#endif

/* Defined in csrc/cuda/backend_cuda.cu with C linkage (its header is C++ only). */
const gd_backend *gd_cuda_backend(void);
void gd_cuda_set_tf32(int enabled);

/* A helper of cuda_probe.cu that must succeed (0), counted as a check. */
#define PROBE(call) gdt_probe((call), #call, __FILE__, __LINE__)
static int gdt_probe(int status, const char *call, const char *file, int line)
{
    gdt_checks++;
    if (status == 0) return 1;
    gdt_report_failure(file, line, "returns cudaSuccess", "%s returned CUDA error %d", call, status);
    return 0;
}

static gd_memory_stats stats_now(int device)
{
    gd_memory_stats s;
    memset(&s, 0, sizeof s);
    OK(gdt_be->memory_stats(&s, device, &gdt_err));
    return s;
}

/* x[0:n] = value (float32), queued on gpudev's stream. */
static void fill(float *x, int64_t n, double value, int device)
{
    gd_ewise ew = {.ndim = 1, .contiguous = 1, .size = n, .shape = {n}};
    gd_operand v;
    memset(&v, 0, sizeof v);
    v.scalar.f = value;
    OK(gdt_be->unary(x, GD_COPY, GD_FLOAT32, &ew, &v, device, &gdt_err));
}

/* ------------------------------------------------------------------------------------------
 * missing devices
 * ---------------------------------------------------------------------------------------- */

/* Allocating on, or synchronizing, a GPU that is not there: GD_ERR_DEVICE_UNAVAILABLE with
 * a message naming it. */
static void check_missing_devices(void)
{
    const int missing[] = {gdt_be->device_count(), 999, -1};
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "cuda:%d", missing[i]);
        gd_error err;
        memset(&err, 0, sizeof err);
        void *p = NULL;
        int rc = gdt_be->alloc(&p, missing[i], 16, &err);
        CHECK(rc == GD_ERR_DEVICE_UNAVAILABLE && strstr(err.message, name), "alloc on %s: status %d, message '%s'",
              name, rc, err.message);
        memset(&err, 0, sizeof err);
        rc = gdt_be->synchronize(missing[i], &err);
        CHECK(rc == GD_ERR_DEVICE_UNAVAILABLE && strstr(err.message, name),
              "synchronize on %s: status %d, message '%s'", name, rc, err.message);
    }
}

/* ------------------------------------------------------------------------------------------
 * exports to another library's stream (DLPack)
 * ---------------------------------------------------------------------------------------- */

enum { ORDER_EXPORT = 1, ORDER_RELEASE = 2 };

/* The life of a DLPack export, as a consumer on its own stream sees it: gpudev fills x with
 * ones; the consumer, told the export happened (ORDER_EXPORT), sums x on its stream after a
 * busy wait; it lets go (ORDER_RELEASE) and gpudev frees x, allocates y of the same size (the
 * pool may hand x's block back at once) and fills it with sevens. `consumer_first` waits for
 * the consumer's stream before gpudev's. The sum the consumer got is returned. */
static double export_and_release(int order, int consumer_first)
{
    const int64_t n = (int64_t)1 << 20;
    const double busy_ms = EMULATED ? 0 : 200;
    uint64_t consumer = 0;
    double got = -1;
    if (!PROBE(gdt_cuda_stream_create(&consumer, gdt_dev))) return got;
    float *x = gdt_alloc((size_t)n * 4);
    double *sum = gdt_alloc(8);
    fill(x, n, 1.0, gdt_dev);
    if (order & ORDER_EXPORT) OK(gdt_be->stream_wait_device(gdt_dev, consumer, &gdt_err));
    PROBE(gdt_cuda_consume(sum, x, n, gdt_dev, consumer, busy_ms));
    if (order & ORDER_RELEASE) OK(gdt_be->device_wait_stream(gdt_dev, consumer, &gdt_err));
    gdt_free(x, (size_t)n * 4);
    float *y = gdt_alloc((size_t)n * 4);
    fill(y, n, 7.0, gdt_dev);
    if (consumer_first) PROBE(gdt_cuda_stream_sync(consumer));
    gdt_sync();
    PROBE(gdt_cuda_stream_sync(consumer));
    gdt_download(&got, sum, 8);
    gdt_free(y, (size_t)n * 4);
    gdt_free(sum, 8);
    gdt_cuda_stream_destroy(consumer);
    return got;
}

static void check_export_order(void)
{
    const double n = (double)((int64_t)1 << 20);
    for (int consumer_first = 0; consumer_first < 2; consumer_first++) {
        double got = export_and_release(ORDER_EXPORT | ORDER_RELEASE, consumer_first);
        CHECK(got == n, "the consumer's sum of exported ones is %.17g, not %.17g (its stream waited for first: %s)",
              got, n, consumer_first ? "the consumer's" : "gpudev's");
    }
#if EMULATED
    /* The emulation runs streams only when waited for, in the order the waits force: without
     * the ordering calls the consumer reads memory not written yet, or already reused. */
    double no_export = export_and_release(ORDER_RELEASE, 1), no_release = export_and_release(ORDER_EXPORT, 0);
    CHECK(no_export != n && no_release != n,
          "without stream_wait_device the consumer read %.17g, without device_wait_stream %.17g: the emulation "
          "should have run the streams in the order that breaks each",
          no_export, no_release);
#endif
    /* the legacy and per-thread default streams are streams too */
    OK(gdt_be->stream_wait_device(gdt_dev, 1, &gdt_err));
    OK(gdt_be->device_wait_stream(gdt_dev, 2, &gdt_err));
    gdt_sync();
}

/* ------------------------------------------------------------------------------------------
 * gpudev's pool
 * ---------------------------------------------------------------------------------------- */

/* Another library made its own pool the device's current one: gpudev's blocks still come
 * from gpudev's pool, which memory_stats and empty_cache describe and act on. */
static void check_own_pool(void)
{
    void *foreign = NULL;
    if (!PROBE(gdt_cuda_foreign_pool(&foreign, gdt_dev))) return;
    const size_t n = (size_t)8 << 20;
    gd_memory_stats before = stats_now(gdt_dev);
    void *p = gdt_alloc(n);
    gd_memory_stats during = stats_now(gdt_dev);
    CHECK(gdt_cuda_pool_reserved(foreign) == 0, "another library's current pool holds %lld bytes of gpudev's",
          (long long)gdt_cuda_pool_reserved(foreign));
    CHECK(during.reserved_bytes >= before.allocated_bytes + (int64_t)n,
          "reserved %lld bytes with %lld allocated (gpudev's pool must hold its blocks)",
          (long long)during.reserved_bytes, (long long)during.allocated_bytes);
    gdt_free(p, n);
    OK(gdt_be->empty_cache(gdt_dev, &gdt_err));
    gd_memory_stats after = stats_now(gdt_dev);
    CHECK(after.reserved_bytes <= during.reserved_bytes - (int64_t)n,
          "empty_cache left %lld bytes reserved of %lld, after freeing %zu", (long long)after.reserved_bytes,
          (long long)during.reserved_bytes, n);
    gdt_cuda_foreign_pool_drop(foreign, gdt_dev);
}

/* After a synchronization the pool keeps a small block it may reuse, and gives back what
 * exceeds its share of the device (runtime.cu: an eighth), for other libraries. */
static void check_release_threshold(void)
{
    gd_device_props props;
    if (!OK(gdt_be->device_props(&props, gdt_dev, &gdt_err))) return;
    OK(gdt_be->empty_cache(gdt_dev, &gdt_err));
    const size_t small = (size_t)1 << 20;
    void *p = gdt_alloc(small);
    gdt_free(p, small);
    gdt_sync();
    CHECK(stats_now(gdt_dev).reserved_bytes >= (int64_t)small, "a freed 1 MiB block was not kept after a sync");
    const size_t big = (size_t)(props.total_memory / 4);
    if (props.free_memory < (int64_t)big + ((int64_t)1 << 30)) {
        printf("  %lld MiB free: the release of a quarter of the device not checked\n",
               (long long)(props.free_memory >> 20));
        return;
    }
    p = gdt_alloc(big);
    gdt_free(p, big);
    gdt_sync();
    gd_memory_stats s = stats_now(gdt_dev);
    CHECK(s.reserved_bytes < (int64_t)big, "after freeing %zu MiB and synchronizing the pool still holds %lld MiB",
          big >> 20, (long long)(s.reserved_bytes >> 20));
    OK(gdt_be->empty_cache(gdt_dev, &gdt_err));
}

/* A long row is reduced in two passes through a scratch buffer, which counts while it lives. */
static void check_scratch_counted(void)
{
    const int64_t n = (int64_t)1 << 22;
    float *x = gdt_alloc((size_t)n * 4);
    double *out = gdt_alloc(8);
    fill(x, n, 0.5, gdt_dev);
    gd_memory_stats before = stats_now(gdt_dev);
    gdt_be->reset_peak_memory(gdt_dev);
    OK(gdt_be->reduce(out, GD_FLOAT64, GD_RED_SUM, x, GD_FLOAT32, 1, n, 1, gdt_dev, &gdt_err));
    gd_memory_stats after = stats_now(gdt_dev);
    CHECK(after.peak_allocated_bytes > before.allocated_bytes && after.allocated_bytes == before.allocated_bytes,
          "a two-pass sum: peak %lld over %lld allocated before, %lld after (the scratch must count while it lives)",
          (long long)after.peak_allocated_bytes, (long long)before.allocated_bytes, (long long)after.allocated_bytes);
    double want = 0.5 * (double)n;
    EXPECT(out, GD_FLOAT64, 1, &want, GDT_EXACT, "sum of %lld halves", (long long)n);
    gdt_free(x, (size_t)n * 4);
    gdt_free(out, 8);
}

/* ------------------------------------------------------------------------------------------
 * the calling thread's current device
 * ---------------------------------------------------------------------------------------- */

static void check_device_restored(void)
{
    int count = gdt_be->device_count();
    if (count < 2) {
        printf("  one device: the restored current device not checked\n");
        return;
    }
    const int other = (gdt_dev + 1) % count;
    if (!PROBE(gdt_cuda_set_current_device(other))) return;
    float *x = gdt_alloc(64 * 4);
    fill(x, 64, 2.0, gdt_dev);
    float a[4] = {1, 2, 3, 4}, *da = gdt_upload_new(a, sizeof a), *c = gdt_alloc(sizeof a);
    const gd_matrix ma = {da, 0, 2, 0};
    OK(gdt_be->gemm(c, GD_FLOAT32, &ma, &ma, 1, 2, 2, 2, 0, gdt_dev, &gdt_err));
    float back[4];
    gdt_download(back, c, sizeof back);
    gdt_sync();
    gdt_free(x, 64 * 4), gdt_free(da, sizeof a), gdt_free(c, sizeof a);
    CHECK(gdt_cuda_current_device() == other,
          "after gpudev worked on cuda:%d the thread's current device is %d, not the %d it was", gdt_dev,
          gdt_cuda_current_device(), other);
    CHECK(back[0] == 7 && back[3] == 22, "[[1,2],[3,4]] squared gave [[%g,%g],[%g,%g]]", back[0], back[1], back[2],
          back[3]);
    PROBE(gdt_cuda_set_current_device(gdt_dev));
}

/* ------------------------------------------------------------------------------------------
 * TF32
 * ---------------------------------------------------------------------------------------- */

/* A (n, n) @ (n, n) product of 1 + 2^-12 by ones, with TF32 off, on, and off again. In
 * float32 every sum is exact (n + n / 4096); TF32 keeps 10 mantissa bits, so the operand
 * reads as 1 and the sum as n. Off must give the exact value both times (a stale math mode
 * fails the second); on must give n where TF32 is known to be used (the emulation) and one
 * of the two elsewhere (cuBLAS may pick a kernel without tensor cores). */
static void check_tf32_switch(void)
{
    enum { n = 256 };
    const size_t bytes = (size_t)n * n * sizeof(float);
    static float a[n * n], ones[n * n], c[n * n];
    for (int i = 0; i < n * n; i++) a[i] = 1.0f + 1.0f / 4096, ones[i] = 1.0f;
    float *da = gdt_upload_new(a, bytes), *db = gdt_upload_new(ones, bytes), *dc = gdt_alloc(bytes);
    const float exact = n + n / 4096.0f;
    float got[3] = {0};
    for (int step = 0; step < 3; step++) {
        gd_cuda_set_tf32(step == 1);
        const gd_matrix ma = {da, 0, n, 0}, mb = {db, 0, n, 0};
        OK(gdt_be->gemm(dc, GD_FLOAT32, &ma, &mb, 1, n, n, n, 0, gdt_dev, &gdt_err));
        gdt_download(c, dc, bytes);
        got[step] = c[n * n - 1];
        CHECK(c[0] == got[step], "step %d: c[0][0] = %.9g but c[-1][-1] = %.9g", step, c[0], got[step]);
    }
    gd_cuda_set_tf32(0);
    gdt_free(da, bytes), gdt_free(db, bytes), gdt_free(dc, bytes);
    CHECK(got[0] == exact && got[2] == exact, "TF32 off gave %.9g, off again %.9g, not %.9g", got[0], got[2], exact);
    CHECK(got[1] == (float)n || (!EMULATED && got[1] == exact), "TF32 on gave %.9g, not %d", got[1], n);
    printf("  TF32 off %.9g, on %.9g, off again %.9g\n", got[0], got[1], got[2]);
}

/* ------------------------------------------------------------------------------------------
 * what only the emulation can stage
 * ---------------------------------------------------------------------------------------- */

#if EMULATED

/* [[1,2],[3,4]] @ itself on `device`; the status, and c's last element in *last. */
static int square_2x2(int device, float *last)
{
    static const float a[4] = {1, 2, 3, 4};
    void *da = NULL, *dc = NULL;
    int rc = gdt_be->alloc(&da, device, sizeof a, &gdt_err);
    if (rc == GD_OK) rc = gdt_be->alloc(&dc, device, sizeof a, &gdt_err);
    if (rc == GD_OK) rc = gdt_be->copy_from_host(da, device, a, sizeof a, &gdt_err);
    gd_error err = {0};
    const gd_matrix ma = {da, 0, 2, 0};
    if (rc == GD_OK) rc = gdt_be->gemm(dc, GD_FLOAT32, &ma, &ma, 1, 2, 2, 2, 0, device, &err);
    float c[4] = {0};
    if (rc == GD_OK) OK(gdt_be->copy_to_host(c, dc, device, sizeof c, &gdt_err));
    else gdt_err = err;
    *last = c[3];
    gdt_be->free(da, device, sizeof a);
    gdt_be->free(dc, device, sizeof a);
    return rc;
}

/* The first product on a device whose free memory is gone to another library, while
 * gpudev's pool keeps freed blocks (below its release threshold): cuBLAS cannot take the
 * memory its handle needs until the pool gives its cache back. Before that, a creation that
 * fails for another reason is reported, and the next product tries again. Device 1: the
 * other sections never multiply there. */
static void check_blas_creation(void)
{
    if (gdt_be->device_count() < 2) return;
    const int d = 1;
    const size_t mib = (size_t)1 << 20, cached_bytes = 61 * mib;
    void *cached = NULL;
    if (!OK(gdt_be->alloc(&cached, d, cached_bytes, &gdt_err))) return;
    gdt_be->free(cached, d, cached_bytes);
    OK(gdt_be->synchronize(d, &gdt_err)); /* the free has run: the pool keeps the block */
    gd_emu_set_device_memory(d, (size_t)stats_now(d).reserved_bytes + 3 * mib); /* the rest is taken */
    gd_emu_fail_next("cublasCreate", 1 /* CUBLAS_STATUS_NOT_INITIALIZED */, 1, 0);
    float last = 0;
    int rc = square_2x2(d, &last);
    CHECK(rc == GD_ERR_CUDA && strstr(gdt_err.message, "cublasCreate"), "a failing cublasCreate: status %d, message '%s'",
          rc, gdt_err.message);
    rc = square_2x2(d, &last);
    CHECK(rc == GD_OK && last == 22, "the first product with 3 MiB free and 61 MiB in gpudev's cache: status %d (%s), "
          "c[1][1] = %g", rc, rc ? gdt_err.message : "", last);
    gd_emu_set_device_memory(d, 0);
}

/* A failed cuBLAS call whose internal launch failed leaves an error behind in CUDA: the next
 * launch must not report it as its own. */
static void check_no_stale_error(void)
{
    gd_emu_fail_next("cublasSgemm", 13 /* CUBLAS_STATUS_EXECUTION_FAILED */, 1, 9 /* InvalidConfiguration */);
    float last = 0;
    int rc = square_2x2(gdt_dev, &last);
    CHECK(rc == GD_ERR_CUDA && strstr(gdt_err.message, "CUBLAS_STATUS_EXECUTION_FAILED"),
          "an injected cuBLAS failure: status %d, message '%s'", rc, gdt_err.message);
    float *x = gdt_alloc(16 * 4);
    gd_ewise ew = {.ndim = 1, .contiguous = 1, .size = 16, .shape = {16}};
    gd_operand v;
    memset(&v, 0, sizeof v);
    gd_error err = {0};
    rc = gdt_be->unary(x, GD_COPY, GD_FLOAT32, &ew, &v, gdt_dev, &err);
    CHECK(rc == GD_OK, "the launch after a failed cuBLAS call reported: %s", err.message);
    rc = gdt_be->synchronize(gdt_dev, &err); /* its end too: and nothing is left queued at exit */
    CHECK(rc == GD_OK, "waiting for the launch after a failed cuBLAS call reported: %s", err.message);
    gdt_free(x, 16 * 4);
}

/* A block freed while its device cannot be made current still leaves the counters. */
static void check_free_counted(void)
{
    if (gdt_be->device_count() < 2) return;
    const size_t n = 4096;
    void *p = gdt_alloc(n);
    gd_memory_stats before = stats_now(gdt_dev);
    PROBE(gdt_cuda_set_current_device((gdt_dev + 1) % 2));
    gd_emu_fail_next("cudaSetDevice", 46 /* cudaErrorDevicesUnavailable */, 1, 0);
    gdt_be->free(p, gdt_dev, n);
    gd_memory_stats after = stats_now(gdt_dev);
    CHECK(after.allocated_bytes == before.allocated_bytes - (int64_t)n && after.allocations == before.allocations - 1,
          "a free that could not enter its device: allocated %lld -> %lld, allocations %lld -> %lld",
          (long long)before.allocated_bytes, (long long)after.allocated_bytes, (long long)before.allocations,
          (long long)after.allocations);
    PROBE(gdt_cuda_set_current_device(gdt_dev));
}

#endif /* EMULATED */

static const gdt_section cuda_sections[] = {
    {"cuda: missing devices", check_missing_devices},
    {"cuda: export order", check_export_order},
    {"cuda: own pool", check_own_pool},
    {"cuda: release threshold", check_release_threshold},
    {"cuda: scratch counted", check_scratch_counted},
    {"cuda: device restored", check_device_restored},
    {"cuda: TF32 switch", check_tf32_switch},
#if EMULATED
    {"cuda: cuBLAS creation", check_blas_creation},
    {"cuda: no stale error", check_no_stale_error},
    {"cuda: free counted", check_free_counted},
#endif
};

const gdt_target gdt_target_under_test = {
    .backend = gd_cuda_backend,
    .emulated = EMULATED,
    .sections = cuda_sections,
    .num_sections = sizeof cuda_sections / sizeof cuda_sections[0],
    .bench = NULL,
};
