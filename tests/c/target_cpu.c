/* target_cpu.c - the CPU backend as the conformance test's target, and the checks only it
 * has: thread counts (gpudev's and OpenBLAS's, results independent of them, the generic
 * sections rerun on one thread and on more threads than cores), its memory counters and
 * alignment, normals bit-identical to philox.h, concurrent callers, a forked child after
 * parallel work, and the priming of OpenBLAS's buffers. Device memory is host memory here,
 * so these checks may touch it directly. OpenBLAS only warns on stderr when it is misused
 * from a parallel region; tests/c/Makefile turns such a warning into a failure.
 */
#include "conformance.h"

#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <sys/wait.h> /* the fork check: Windows has no fork */
#include <unistd.h>
#endif

#include <cblas.h>

#include "backend_cpu.h"
#include "philox.h"
#include "port.h" /* CPU count and threads, as the backend sees them, on POSIX and Windows */

static const gd_backend *cpu_table(void) { return &gd_cpu_backend; }

static int affinity_cores(void) { return gd_port_cpu_count(); }

/* ------------------------------------------------------------------------------------------
 * threads
 * ---------------------------------------------------------------------------------------- */

static void check_threads(void)
{
    const int cores = affinity_cores();
    CHECK(strcmp(gdt_be->name, "cpu") == 0 && gdt_be->device_count() == 1 && gdt_be->synchronize,
          "the CPU table: name %s, %d devices, synchronize %s", gdt_be->name, gdt_be->device_count(),
          gdt_be->synchronize ? "set" : "NULL");
    CHECK(gd_cpu_get_num_threads() == cores, "default threads %d, affinity mask has %d", gd_cpu_get_num_threads(),
          cores);
    gd_cpu_set_num_threads(1);
    CHECK(gd_cpu_get_num_threads() == 1 && scipy_openblas_get_num_threads() == 1, "set 1: gpudev %d, OpenBLAS %d",
          gd_cpu_get_num_threads(), scipy_openblas_get_num_threads());
    gd_cpu_set_num_threads(0);
    CHECK(gd_cpu_get_num_threads() == 1, "set 0 clamps to 1: %d", gd_cpu_get_num_threads());
    gd_cpu_set_num_threads(cores);
    /* products are split over gpudev's threads: OpenBLAS itself stays at one */
    CHECK(gd_cpu_get_num_threads() == cores && scipy_openblas_get_num_threads() == 1,
          "set back to %d: gpudev %d, OpenBLAS %d (expected 1)", cores, gd_cpu_get_num_threads(),
          scipy_openblas_get_num_threads());
    const char *simd = gd_cpu_simd_level();
    CHECK(!strcmp(simd, "avx512f") || !strcmp(simd, "avx2") || !strcmp(simd, "neon") || !strcmp(simd, "baseline"),
          "simd level %s", simd);
    CHECK(strstr(gd_cpu_blas_config(), "OpenBLAS") != NULL, "blas config %s", gd_cpu_blas_config());

    /* a long float32 sum gives the same bits on one thread and on all of them */
    enum { M = 10000000 };
    float *y = malloc(M * sizeof(float));
    for (int64_t i = 0; i < M; i++) y[i] = (float)(gdt_rand_normal() + 1.0);
    double r[3];
    for (int k = 0; k < 3; k++) {
        gd_cpu_set_num_threads(k == 0 ? cores : k == 1 ? 1 : 3);
        OK(gdt_be->reduce(&r[k], GD_FLOAT64, GD_RED_SUM, y, GD_FLOAT32, 1, M, 1, 0, &gdt_err));
    }
    gd_cpu_set_num_threads(cores);
    CHECK(r[0] == r[1] && r[0] == r[2], "sum of 1e7 float32 on %d, 1 and 3 threads: %.17g %.17g %.17g", cores, r[0],
          r[1], r[2]);
    free(y);
}

/* The generic sections again with the thread count forced: one thread takes the serial
 * paths of every entry, three (more than this machine may have) split the work of the
 * parallel ones unevenly. */
static void rerun_with_threads(int n, int all)
{
    const int cores = gd_cpu_get_num_threads();
    gd_cpu_set_num_threads(n);
    gdt_check_elementwise();
    gdt_check_reduce();
    gdt_check_gemm();
    gdt_check_permute();
    if (all) {
        gdt_check_copies();
        gdt_check_astype();
        gdt_check_arange();
        gdt_check_random();
    }
    gd_cpu_set_num_threads(cores);
    CHECK(scipy_openblas_get_num_threads() == 1, "OpenBLAS at %d threads, expected 1 (gpudev %d)",
          scipy_openblas_get_num_threads(), cores);
}

static void check_one_thread(void) { rerun_with_threads(1, 1); }
static void check_three_threads(void) { rerun_with_threads(3, 0); }

/* ------------------------------------------------------------------------------------------
 * memory counters and alignment; random normals exact
 * ---------------------------------------------------------------------------------------- */

static void check_cpu_memory(void)
{
    static const size_t sizes[] = {1, 7, 64, 1000, 819200, (size_t)4 << 20, ((size_t)4 << 20) + 3};
    enum { N = sizeof sizes / sizeof sizes[0] };
    gd_memory_stats s0, s1, s2;
    gd_error err;
    memset(&err, 0, sizeof err);
    CHECK(gdt_be->empty_cache != NULL, "the CPU backend has no empty_cache");
    OK(gdt_be->empty_cache(0, &err)); /* blocks kept by earlier checks go back first */
    OK(gdt_be->memory_stats(&s0, 0, &err));
    void *p[N];
    size_t total = 0;
    for (int i = 0; i < N; i++) {
        p[i] = gdt_alloc(sizes[i]);
        CHECK((uintptr_t)p[i] % 64 == 0, "alloc(%zu) = %p is not 64-byte aligned", sizes[i], p[i]);
        memset(p[i], 0xab, sizes[i]); /* writable to the last byte (AddressSanitizer checks) */
        total += sizes[i];
    }
    OK(gdt_be->memory_stats(&s1, 0, &err));
    CHECK(s1.allocated_bytes - s0.allocated_bytes == (int64_t)total && s1.allocations - s0.allocations == N &&
              s1.reserved_bytes - s0.reserved_bytes >= (int64_t)total && s1.peak_allocated_bytes >= s1.allocated_bytes,
          "after %zu bytes in %d blocks: allocated +%lld, allocations +%lld, reserved +%lld, peak %lld", total, N,
          (long long)(s1.allocated_bytes - s0.allocated_bytes), (long long)(s1.allocations - s0.allocations),
          (long long)(s1.reserved_bytes - s0.reserved_bytes), (long long)s1.peak_allocated_bytes);
    for (int i = 0; i < N; i++) gdt_free(p[i], sizes[i]);
    OK(gdt_be->memory_stats(&s2, 0, &err));
    CHECK(s2.allocated_bytes == s0.allocated_bytes && s2.allocations == s0.allocations &&
              s2.reserved_bytes >= s0.reserved_bytes && s2.peak_allocated_bytes == s1.peak_allocated_bytes,
          "after freeing: allocated %lld, allocations %lld, reserved %lld, peak %lld -> %lld",
          (long long)s2.allocated_bytes, (long long)s2.allocations, (long long)s2.reserved_bytes,
          (long long)s1.peak_allocated_bytes, (long long)s2.peak_allocated_bytes);
    /* the 800 KiB block and the two 4 MiB ones are kept for reuse (not in sanitizer builds):
     * the last one freed comes back for its size, the 800 KiB one for a size in its 4 KiB
     * step, and empty_cache gives them all back */
    if (s2.reserved_bytes > s0.reserved_bytes) {
        void *again = gdt_alloc(sizes[N - 1]);
        CHECK(again == p[N - 1], "a freed %zu-byte block was kept but not reused: %p, then %p", sizes[N - 1],
              p[N - 1], again);
        gdt_free(again, sizes[N - 1]);
        again = gdt_alloc(sizes[N - 3] - 4000);
        CHECK(again == p[N - 3], "a freed %zu-byte block was not reused for %zu bytes: %p, then %p", sizes[N - 3],
              sizes[N - 3] - 4000, p[N - 3], again);
        gdt_free(again, sizes[N - 3] - 4000);
    }
    OK(gdt_be->empty_cache(0, &err));
    OK(gdt_be->memory_stats(&s2, 0, &err));
    CHECK(s2.reserved_bytes == s0.reserved_bytes, "after empty_cache: reserved %lld, before the blocks %lld",
          (long long)s2.reserved_bytes, (long long)s0.reserved_bytes);
    gdt_be->reset_peak_memory(0);
    OK(gdt_be->memory_stats(&s2, 0, &err));
    CHECK(s2.peak_allocated_bytes == s2.allocated_bytes, "reset: peak %lld, allocated %lld",
          (long long)s2.peak_allocated_bytes, (long long)s2.allocated_bytes);

    void *huge = NULL;
    int rc = gdt_be->alloc(&huge, 0, (size_t)1 << 62, &err);
    CHECK(rc == GD_ERR_HOST_OOM && huge == NULL && strstr(err.message, "out of host memory allocating 4.0 EiB"),
          "4 EiB: status %d, message %s", rc, err.message);
    rc = gdt_be->alloc(&huge, 0, SIZE_MAX - 10, &err);
    CHECK(rc == GD_ERR_HOST_OOM && huge == NULL, "SIZE_MAX - 10 bytes: status %d", rc);
}

/* The CPU backend's refusals name what they refuse (the generic section checks the status). */
static void check_cpu_messages(void)
{
    float one = 1.0f, c = 5.0f;
    int64_t i4[4] = {1, 2, 3, 4};
    gd_ewise ew = {.ndim = 1, .contiguous = 1, .size = 4, .shape = {4}};
    gd_operand a;
    memset(&a, 0, sizeof a);
    a.data = i4, a.strides[0] = 1;
    gd_error err;
    memset(&err, 0, sizeof err);
    int rc = gdt_be->unary(i4, GD_EXP, GD_INT64, &ew, &a, 0, &err);
    CHECK(rc == GD_ERR_VALUE && strstr(err.message, "exp") && strstr(err.message, "int64"), "int64 exp: %s",
          err.message);
    gd_matrix m1 = {&one, 0, 1, 0};
    rc = gdt_be->gemm(&c, GD_FLOAT32, &m1, &m1, 1, (int64_t)INT_MAX + 1, 1, 1, 0, 0, &err);
    CHECK(rc == GD_ERR_VALUE && strstr(err.message, "2147483648"), "m > INT_MAX: %s", err.message);
    gd_matrix wide = {&one, 0, (int64_t)INT_MAX + 1, 0};
    rc = gdt_be->gemm(&c, GD_FLOAT32, &wide, &m1, 1, 1, 1, 1, 0, 0, &err);
    CHECK(rc == GD_ERR_VALUE && strstr(err.message, "lda=2147483648"), "lda > INT_MAX: %s", err.message);
    CHECK(c == 5.0f, "refused products wrote their output");
}

static void check_normals_exact(void)
{
    const int64_t n = 100003;
    for (int dt = GD_FLOAT32; dt <= GD_FLOAT64; dt++) {
        gd_dtype t = (gd_dtype)dt;
        int per = GD_PHILOX_PER_BLOCK(t == GD_FLOAT32);
        void *out = gdt_alloc((size_t)n * 8);
        double *want = malloc((size_t)n * sizeof(double));
        for (int64_t b = 0; b * per < n; b++) {
            float f[4];
            double d[2];
            if (t == GD_FLOAT32) gd_philox_block_f32(f, 1, 5 + (uint64_t)b, 99);
            else gd_philox_block_f64(d, 1, 5 + (uint64_t)b, 99);
            for (int j = 0; j < per && b * per + j < n; j++) want[b * per + j] = t == GD_FLOAT32 ? f[j] : d[j];
        }
        if (OK(gdt_be->random(out, t, GD_RAND_NORMAL, 99, 5, n, 0, &gdt_err)))
            EXPECT_HOST(out, t, n, want, GDT_EXACT, "CPU normals %s bit for bit as philox.h", gdt_dtype_name(t));
        gdt_free(out, (size_t)n * 8);
        free(want);
    }
}

/* ------------------------------------------------------------------------------------------
 * concurrency: several threads at once, and a forked child after parallel work
 * ---------------------------------------------------------------------------------------- */

typedef struct worker_arg {
    int id, failures;
    atomic_int *finished;
} worker_arg;

static void worker(void *p)
{
    worker_arg *w = p;
    enum { N = 300000, M = 128 };
    float *x = malloc(N * sizeof(float)), *a = malloc(M * M * sizeof(float)), *c = malloc(M * M * sizeof(float));
    float *c8 = malloc(8 * M * M * sizeof(float));
    for (int i = 0; i < N; i++) x[i] = (float)(i % 7) + (float)w->id;
    for (int i = 0; i < M * M; i++) a[i] = i % M == i / M ? 1.0f : 0.0f; /* identity */
    double expect = 0;
    for (int i = 0; i < N; i++) expect += x[i];
    gd_error err;
    for (int rep = 0; rep < 20; rep++) {
        double s = 0;
        if (gdt_be->reduce(&s, GD_FLOAT64, GD_RED_SUM, x, GD_FLOAT32, 1, N, 1, 0, &err) != GD_OK || s != expect)
            w->failures++;
        gd_matrix ma = {a, 0, M, 0}, mx = {x, 0, M, 0}, mx8 = {x, 0, M, M * M};
        if (gdt_be->gemm(c, GD_FLOAT32, &ma, &mx, 1, M, M, M, 0, 0, &err) != GD_OK || memcmp(c, x, M * M * 4) != 0)
            w->failures++;
        /* a batch of 8 mid-size products: OpenBLAS held at one thread by every worker at once */
        if (gdt_be->gemm(c8, GD_FLOAT32, &ma, &mx8, 8, M, M, M, M * M, 0, &err) != GD_OK ||
            memcmp(c8, x, 8 * M * M * 4) != 0)
            w->failures++;
    }
    free(x), free(a), free(c), free(c8);
    atomic_fetch_add(w->finished, 1);
}

static void check_concurrency(void)
{
    enum { T = 4 };
    worker_arg args[T];
    atomic_int finished = 0;
    int started = 0;
    for (int i = 0; i < T; i++) {
        args[i] = (worker_arg){i, 0, &finished};
        const int ok = gd_thread_start(worker, &args[i]) == 0;
        CHECK(ok, "starting thread %d", i);
        started += ok;
    }
    while (atomic_load(&finished) < started) gd_thread_yield(); /* the threads are detached */
    int failures = 0;
    for (int i = 0; i < T; i++) failures += args[i].failures;
    CHECK(failures == 0, "%d wrong results from %d concurrent threads", failures, T);
    CHECK(scipy_openblas_get_num_threads() == 1, "OpenBLAS at %d threads, expected 1 (gpudev %d)",
          scipy_openblas_get_num_threads(), gd_cpu_get_num_threads());

#ifdef _WIN32
    printf("fork: not checked (Windows has no fork)\n");
#else
    /* after the parallel work above, a forked child must still compute (its own pool starts) */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20); /* a hang in the child becomes a failure, not a stuck test */
        enum { N = 1 << 20 };
        float *x = malloc(N * sizeof(float));
        for (int i = 0; i < N; i++) x[i] = 1.0f;
        double s = 0;
        gd_error err;
        int rc = gdt_be->reduce(&s, GD_FLOAT64, GD_RED_SUM, x, GD_FLOAT32, 1, N, 1, 0, &err);
        _exit(rc == GD_OK && s == N ? 0 : 1);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork or waitpid failed");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "forked child: status %d", status);
#endif
}

/* ------------------------------------------------------------------------------------------
 * OpenBLAS's packing buffers are primed before the first float32 product, once for each
 * thread count (gemm.c says why; the speed it buys is a bench row, not a check)
 * ---------------------------------------------------------------------------------------- */

static int primed_after_product(int threads)
{
    enum { M = 64 };
    static float a[M * M], c[M * M];
    for (int i = 0; i < M * M; i++) a[i] = i % M == i / M ? 1.0f : 0.0f; /* identity */
    gd_cpu_set_num_threads(threads);
    gd_matrix ma = {a, 0, M, 0};
    gd_error err;
    CHECK(gdt_be->gemm(c, GD_FLOAT32, &ma, &ma, 1, M, M, M, 0, 0, &err) == GD_OK && memcmp(c, a, sizeof c) == 0,
          "float32 identity product on %d threads", threads);
    return gd_cpu_blas_primed_threads(NULL);
}

static void check_blas_primed(void)
{
    const int cores = gd_cpu_get_num_threads();
    int late = -1;
    const int one = primed_after_product(1);
    gd_cpu_blas_primed_threads(&late);
    /* a 1-thread try is never late, but earlier sections' tries on more threads may have been,
     * 3 times on a busy machine: then gpudev has stopped trying */
    CHECK(one >= 1 || late == 3, "after a 1-thread float32 product, buffers primed for %d threads (%d late tries)",
          one, late);
    /* more threads than there may be cores: the try can run late on a busy machine, and is
     * then not counted, but no more are made after 3 late ones */
    int three = primed_after_product(3);
    for (int i = 0; i < 3 && three < 3; i++) three = primed_after_product(3);
    gd_cpu_blas_primed_threads(&late);
    CHECK(three >= 3 || late == 3, "after 3-thread float32 products: primed for %d threads, %d late tries", three,
          late);
    CHECK(late >= 0 && late <= 3, "late priming tries %d, expected 0 to 3", late);
    if (three >= 3) CHECK(primed_after_product(3) == three, "a second 3-thread product primed again");
    gd_cpu_set_num_threads(cores);
}

/* ------------------------------------------------------------------------------------------
 * the clock (port.h's, QueryPerformanceCounter on Windows): the pointer chase times its walks
 * with it, so the walks' times (steps x ns per load) fit between two readings taken around it
 * and each is above zero (a million dependent loads take a millisecond; the clock's tick on
 * Windows is 100 ns). No speed is checked.
 * ---------------------------------------------------------------------------------------- */

static void check_clock(void)
{
    enum { REPEATS = 3 };
    const int64_t steps = 1000000;
    double ns[REPEATS] = {0};
    const int64_t t0 = gd_port_now_ns();
    if (!OK(gdt_be->pointer_chase(ns, REPEATS, (int64_t)1 << 20, steps, gdt_dev, &gdt_err))) return;
    const int64_t t1 = gd_port_now_ns();
    double walked = 0;
    int positive = 1;
    for (int r = 0; r < REPEATS; r++) {
        positive &= ns[r] > 0 && isfinite(ns[r]);
        walked += ns[r] * (double)steps;
    }
    CHECK(t1 >= t0, "the clock went back: %lld ns, then %lld ns", (long long)t0, (long long)t1);
    CHECK(positive, "ns per load %g, %g, %g: a walk of a million loads took no time on the clock", ns[0], ns[1], ns[2]);
    CHECK(walked <= (double)(t1 - t0) * (1 + 1e-9), "the walks took %.0f ns, more than the %lld ns around them",
          walked, (long long)(t1 - t0));
}

/* ------------------------------------------------------------------------------------------
 * timings only the CPU has
 * ---------------------------------------------------------------------------------------- */

static void cpu_bench(void)
{
    const int nt = gd_cpu_get_num_threads();
    printf("threads %d, simd %s, %s\n", nt, gd_cpu_simd_level(), gd_cpu_blas_config());
    const int64_t n = 100000000;
    float *x = gdt_alloc((size_t)n * 4);
    OK(gdt_be->random(x, GD_FLOAT32, GD_RAND_NORMAL, 1, 0, n, 0, &gdt_err));
    for (int threads = 1; threads <= nt; threads = threads == nt ? nt + 1 : nt) {
        gd_cpu_set_num_threads(threads);
        for (int sq = 0; sq < 2; sq++) {
            double s, best = 1e9;
            for (int r = 0; r < 7; r++) {
                double t0 = gdt_now();
                OK(gdt_be->reduce(&s, GD_FLOAT64, sq ? GD_RED_SUMSQ : GD_RED_SUM, x, GD_FLOAT32, 1, n, 1, 0, &gdt_err));
                best = fmin(best, gdt_now() - t0);
            }
            gdt_bench_row(4e8 / best / 1e9, "GB/s (best of 7)", "%s, 1e+08 float32, %d thread%s",
                          sq ? "sum of squares" : "sum", threads, threads == 1 ? "" : "s");
        }
    }
    gd_cpu_set_num_threads(nt);
    gdt_free(x, (size_t)n * 4);
    const size_t bytes = (size_t)400 << 20;
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
        double t0 = gdt_now();
        void *p = gdt_alloc(bytes);
        memset(p, 1, bytes);
        gdt_free(p, bytes);
        best = fmin(best, gdt_now() - t0);
    }
    gdt_bench_row(best * 1e3 / 419.43, "ms per MB (best of 5)", "alloc + first write of 400 MiB");
}

/* ------------------------------------------------------------------------------------------
 * the target
 * ---------------------------------------------------------------------------------------- */

static const gdt_section cpu_sections[] = {
    {"cpu: threads", check_threads},
    {"cpu: memory", check_cpu_memory},
    {"cpu: messages", check_cpu_messages},
    {"cpu: normals exact", check_normals_exact},
    {"cpu: concurrency", check_concurrency},
    {"cpu: BLAS buffers primed", check_blas_primed},
    {"cpu: clock", check_clock},
    {"cpu: 1 thread", check_one_thread},
    {"cpu: 3 threads", check_three_threads},
};

const gdt_target gdt_target_under_test = {
    .backend = cpu_table,
    .emulated = 0,
    .sections = cpu_sections,
    .num_sections = sizeof cpu_sections / sizeof cpu_sections[0],
    .bench = cpu_bench,
};
