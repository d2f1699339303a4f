/* bench_pool.c - times the CPU worker pool (csrc/cpu/pool.c) against a serial loop, on a
 * quiet machine and with busy processes it starts itself: the figures behind the pool's spin
 * lengths and the work sizes worth threads (csrc/cpu/threads.h).
 *
 *   bench_pool [quick | wake | sweep]   quick: fewer sizes; wake: part 1 only; sweep: the
 *                                       break-even sweep with no busy processes only
 * Built with -DGD_POOL_TEST_HOOKS, the pool's back-off (pool.c, GD_POOL_BACKOFF_NS) is
 * off: the sweep then shows the break-even of the threads themselves.
 *
 * 1. Wake-up: how long a worker takes to start a loop when it was spinning and when it
 *    was asleep (the figures behind the pool's spin lengths).
 * 2. float32 `out = a + b` and `a.sum()` at 200^2 .. 4000^2: serial and pool; quiet, then
 *    with `cores` and `cores - 1` busy processes. Median of 11 repeats, the schemes
 *    alternating; each repeat times a batch of calls (>= 10 ms) with a 1 us pause between
 *    calls, as an interpreter leaves, after 15 ms asleep so that no thread of the previous
 *    scheme still spins. (The OpenMP parallel-for the pool replaced measured 0.07-0.7x of
 *    serial here with no busy process started at load average 6.6, and 10-800x slower than
 *    NumPy with busy processes: threads.c.)
 * 3. Break-even per kind of operation (elementwise, reduction, copy, astype, random, exp):
 *    serial against the pool on all cores, n = 2^10 .. 2^22, as a ratio of the medians
 *    and of the fastest single calls (the calls least disturbed by other processes: the
 *    nearest this machine gets to an idle one).
 * The load average is printed beside every table: on a shared machine "quiet" is not.
 */
#define _GNU_SOURCE

#include "philox.h"
#include "pool.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "busy_procs.h"

#define REPEATS 11
#define SETTLE_NS 15e6 /* between batches: longer than any spin of the pool's threads */
#define BATCH_NS 10e6
#define GAP_NS 1000
#define MIN_LOG2 10 /* break-even sweeps: n = 2^MIN_LOG2 .. */
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SIMD __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SIMD
#endif

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e9 * (double)ts.tv_sec + (double)ts.tv_nsec;
}

static void pause_ns(double ns)
{
    double until = now_ns() + ns;
    while (now_ns() < until) {
    }
}

static void sleep_ns(double ns)
{
    struct timespec ts = {(time_t)(ns / 1e9), (long)(ns - 1e9 * (double)(time_t)(ns / 1e9))};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void print_load(const char *what)
{
    double l[3] = {0};
    if (getloadavg(l, 3) < 0) l[0] = l[1] = l[2] = -1;
    printf("\n%s  [load average %.2f %.2f %.2f]\n", what, l[0], l[1], l[2]);
}

/* ------------------------------------------------------------------------------------------
 * kernels, as the backend writes them
 * ---------------------------------------------------------------------------------------- */

typedef void (*range_fn)(void *ctx, int64_t begin, int64_t end);

typedef struct job {
    const float *a, *b;
    float *out;
    double *out64;
    double *part; /* reductions: one partial per block */
    int64_t n, block;
} job;

SIMD static void add_range(void *ctx, int64_t b, int64_t e)
{
    const job *j = ctx;
    for (int64_t i = b; i < e; i++) j->out[i] = j->a[i] + j->b[i];
}

/* axpby as the CPU backend writes it (an optimizer's update, in place): out = 1 * out + alpha * a */
SIMD static void axpby_range(void *ctx, int64_t b, int64_t e)
{
    const job *j = ctx;
    const float beta = 1.0f, alpha = -1e-3f;
    for (int64_t i = b; i < e; i++) j->out[i] = beta * j->out[i] + alpha * j->a[i];
}

SIMD static void exp_range(void *ctx, int64_t b, int64_t e)
{
    const job *j = ctx;
    for (int64_t i = b; i < e; i++) j->out[i] = expf(j->a[i]);
}

SIMD static void astype_range(void *ctx, int64_t b, int64_t e)
{
    const job *j = ctx;
    for (int64_t i = b; i < e; i++) j->out64[i] = (double)j->a[i];
}

static void copy_range(void *ctx, int64_t b, int64_t e) /* bytes */
{
    const job *j = ctx;
    memcpy((char *)j->out + b, (const char *)j->a + b, (size_t)(e - b));
}

static void random_range(void *ctx, int64_t b, int64_t e) /* Philox blocks of 4 */
{
    const job *j = ctx;
    for (int64_t blk = b; blk < e; blk++) {
        float v[4];
        gd_philox_block_f32(v, 1, (uint64_t)blk, 1234);
        memcpy(j->out + blk * 4, v, (size_t)MIN(4, j->n - blk * 4) * sizeof(float));
    }
}

SIMD static double sum_row(const float *x, int64_t n) /* 16 lanes, a fixed tree */
{
    double acc[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; l++) acc[l] += (double)x[i + l];
    for (int l = 0; i < n; i++, l++) acc[l] += (double)x[i];
    for (int w = 8; w > 0; w /= 2)
        for (int l = 0; l < w; l++) acc[l] += acc[l + w];
    return acc[0];
}

static void sum_blocks_range(void *ctx, int64_t b, int64_t e)
{
    const job *j = ctx;
    for (int64_t blk = b; blk < e; blk++) {
        int64_t s = blk * j->block;
        j->part[blk] = sum_row(j->a + s, MIN(j->block, j->n - s));
    }
}

/* ------------------------------------------------------------------------------------------
 * operations: one call each, on nt threads of a scheme
 * ---------------------------------------------------------------------------------------- */

enum { SERIAL, POOL, NSCHEMES };

static void run_loop(int scheme, int nt, int64_t n, int64_t align, range_fn fn, void *ctx)
{
    if (scheme == SERIAL || nt <= 1)
        fn(ctx, 0, n);
    else
        gd_pool_for(nt, n, align, 0, fn, ctx);
}

enum { K_ADD, K_SUM, K_COPY, K_ASTYPE, K_RANDOM, K_EXP, K_AXPBY, NKINDS };
static const char *kind_names[NKINDS] = {"add", "sum", "copy", "astype", "random", "exp", "axpby"};

static double sink;

static void op(int kind, int scheme, int nt, job *j)
{
    switch (kind) {
    case K_ADD: run_loop(scheme, nt, j->n, 16, add_range, j); break;
    case K_EXP: run_loop(scheme, nt, j->n, 16, exp_range, j); break;
    case K_AXPBY: run_loop(scheme, nt, j->n, 16, axpby_range, j); break;
    case K_ASTYPE: run_loop(scheme, nt, j->n, 16, astype_range, j); break;
    case K_COPY: run_loop(scheme, nt, j->n * 4, 4096, copy_range, j); break;
    case K_RANDOM: run_loop(scheme, nt, (j->n + 3) / 4, 16, random_range, j); break;
    case K_SUM: {
        j->block = MAX((int64_t)1 << 14, (j->n + 1023) / 1024);
        j->block = (j->block + 15) / 16 * 16;
        int64_t nblocks = (j->n + j->block - 1) / j->block;
        if (nblocks == 1) {
            sink += sum_row(j->a, j->n);
            break;
        }
        run_loop(scheme, nt, nblocks, 1, sum_blocks_range, j);
        double s = 0;
        for (int64_t i = 0; i < nblocks; i++) s += j->part[i];
        sink += s;
        break;
    }
    }
}

static job make_job(int64_t n)
{
    job j = {0};
    j.n = n;
    j.a = malloc((size_t)n * sizeof(float));
    j.b = malloc((size_t)n * sizeof(float));
    j.out = malloc((size_t)n * sizeof(float));
    j.out64 = malloc((size_t)n * sizeof(double));
    j.part = malloc(1024 * sizeof(double));
    if (!j.a || !j.b || !j.out || !j.out64 || !j.part) {
        fprintf(stderr, "out of memory for n=%lld\n", (long long)n);
        exit(1);
    }
    for (int64_t i = 0; i < n; i++) {
        ((float *)j.a)[i] = (float)(i % 1000) * 1e-3f;
        ((float *)j.b)[i] = 1.0f;
        j.out[i] = 0;
        j.out64[i] = 0;
    }
    return j;
}

static void free_job(job *j)
{
    free((void *)j->a);
    free((void *)j->b);
    free(j->out);
    free(j->out64);
    free(j->part);
}

/* Median time per call (ns) of each scheme in `schemes`, the schemes alternating, and the
 * fastest single call of each (the run least disturbed by other processes). */
static void time_schemes(int kind, job *j, int nt, const int *schemes, int ns, double *result, double *best)
{
    double t[NSCHEMES][REPEATS];
    for (int w = 0; w < 3; w++) op(kind, SERIAL, 1, j); /* warm caches, fault in pages */
    double t0 = now_ns();
    op(kind, SERIAL, 1, j);
    const double one = now_ns() - t0 + GAP_NS;
    const int calls = (int)MAX(1.0, MIN(100000.0, BATCH_NS / one));
    for (int s = 0; s < ns; s++) {
        op(kind, schemes[s], nt, j); /* start each scheme's threads */
        best[s] = 1e300;
    }
    for (int r = 0; r < REPEATS; r++)
        for (int s = 0; s < ns; s++) {
            sleep_ns(SETTLE_NS);
            double start = now_ns(), prev = start;
            for (int c = 0; c < calls; c++) {
                op(kind, schemes[s], nt, j);
                double done = now_ns();
                best[s] = MIN(best[s], done - prev);
                pause_ns(GAP_NS);
                prev = now_ns();
            }
            t[s][r] = (now_ns() - start) / calls - GAP_NS;
        }
    for (int s = 0; s < ns; s++) result[s] = median(t[s], REPEATS);
}

static void fmt_time(char *buf, size_t size, double ns)
{
    if (ns < 1e3)
        snprintf(buf, size, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(buf, size, "%.1f us", ns / 1e3);
    else
        snprintf(buf, size, "%.2f ms", ns / 1e6);
}

/* ------------------------------------------------------------------------------------------
 * 1. wake-up latency
 * ---------------------------------------------------------------------------------------- */

typedef struct wake_probe {
    pthread_t caller;
    double t0, caller_start;
    _Atomic double worker_start;
} wake_probe;

static void wake_fn(void *ctx, int64_t b, int64_t e)
{
    (void)b;
    (void)e;
    wake_probe *w = ctx;
    double t = now_ns();
    if (!pthread_equal(pthread_self(), w->caller)) {
        atomic_store(&w->worker_start, t);
    } else if (w->caller_start == 0) { /* hold the first item until the worker has started */
        w->caller_start = t;
        while (atomic_load(&w->worker_start) == 0 && now_ns() - t < 20e6) {
        }
    }
}

/* Time from the call until the worker starts its first item (it may take both: the
 * caller's item is held only once the caller gets to it), and until the caller starts
 * its own (after announcing the loop, which costs a system call when the worker sleeps). */
static void bench_wake(int samples)
{
    print_load("Wake-up: a 2-thread loop of 2 items; time until each thread starts an item");
    printf("| worker was | caller starts (median) | worker starts (median) | worker starts (90th pct) |\n");
    printf("|---|---|---|---|\n");
    double *cs = calloc((size_t)samples, sizeof(double)), *ws = calloc((size_t)samples, sizeof(double));
    for (int asleep = 0; asleep < 2; asleep++) {
        int kc = 0, kw = 0;
        for (int i = 0; i < samples; i++) {
            pause_ns(asleep ? 3e6 : 5e3); /* longer than the worker's spin, or well within */
            wake_probe w = {pthread_self(), now_ns(), 0, 0};
            gd_pool_for(2, 2, 1, 1, wake_fn, &w);
            if (w.caller_start > 0) cs[kc++] = w.caller_start - w.t0;
            if (w.worker_start > 0) ws[kw++] = w.worker_start - w.t0;
        }
        char a[32] = "-", b[32] = "-", c[32] = "-";
        if (kc) fmt_time(a, sizeof a, median(cs, kc));
        if (kw) {
            fmt_time(b, sizeof b, median(ws, kw)); /* sorts ws */
            fmt_time(c, sizeof c, ws[(int)(0.9 * (kw - 1))]);
        }
        printf("| %s | %s | %s | %s |  (%d samples; the worker started within 20 ms in %d)\n",
               asleep ? "asleep" : "spinning", a, b, c, samples, kw);
    }
    free(cs);
    free(ws);
}

/* ------------------------------------------------------------------------------------------
 * 2. the add and sum tables; 3. break-even sweeps
 * ---------------------------------------------------------------------------------------- */

static void bench_table(int kind, int nt, const int64_t *sides, int nsides, const char *load)
{
    char title[160];
    snprintf(title, sizeof title, "float32 %s, %d threads, %s: median time per call (ratio to serial)",
             kind_names[kind], nt, load);
    print_load(title);
    printf("| size | serial | pool |\n|---|---|---|\n");
    static const int schemes[NSCHEMES] = {SERIAL, POOL};
    for (int i = 0; i < nsides; i++) {
        job j = make_job(sides[i] * sides[i]);
        double r[NSCHEMES], best[NSCHEMES];
        time_schemes(kind, &j, nt, schemes, NSCHEMES, r, best);
        char c[NSCHEMES][32];
        for (int s = 0; s < NSCHEMES; s++) fmt_time(c[s], sizeof c[s], r[s]);
        printf("| %lldx%lld | %s | %s (%.2fx) |\n", (long long)sides[i], (long long)sides[i], c[0], c[1],
               r[0] / r[1]);
        fflush(stdout);
        free_job(&j);
    }
}

/* One row of ratios and the smallest n from which the pool is faster at every larger n. */
static void print_ratios(const char *kind, const char *stat, const double *ratio, int nl)
{
    printf("| %s | %s |", kind, stat);
    int wins_from = -1;
    for (int l = 0; l < nl; l++) {
        printf(" %.2f |", ratio[l]);
        if (ratio[l] > 1.0 && wins_from < 0) wins_from = l;
        if (ratio[l] <= 1.0) wins_from = -1;
    }
    if (wins_from >= 0)
        printf(" 2^%d |\n", MIN_LOG2 + wins_from);
    else
        printf(" never |\n");
}

/* Serial time / pool time for n = 2^MIN_LOG2 .. 2^max_log2: of the medians, and of the fastest
 * calls (closest to an idle machine). */
static void bench_break_even(int nt, const char *load, int max_log2)
{
    char title[160];
    snprintf(title, sizeof title, "Break-even, %d threads, %s: serial time / pool time per n (elements)", nt, load);
    print_load(title);
    const int nl = max_log2 - MIN_LOG2 + 1;
    printf("| kind | of |");
    for (int l = 0; l < nl; l++) printf(" 2^%d |", MIN_LOG2 + l);
    printf(" pool wins from |\n|---|---|");
    for (int l = 0; l < nl; l++) printf("---|");
    printf("---|\n");
    static const int schemes[2] = {SERIAL, POOL};
    job j = make_job((int64_t)1 << max_log2);
    for (int kind = 0; kind < NKINDS; kind++) {
        double med[32], fast[32], serial_ns[32];
        for (int l = 0; l < nl; l++) {
            j.n = (int64_t)1 << (MIN_LOG2 + l);
            double r[2], best[2];
            time_schemes(kind, &j, nt, schemes, 2, r, best);
            med[l] = r[0] / r[1];
            fast[l] = best[0] / best[1];
            serial_ns[l] = best[0];
        }
        print_ratios(kind_names[kind], "medians", med, nl);
        print_ratios(kind_names[kind], "fastest calls", fast, nl);
        printf("| %s | serial, fastest call (us) |", kind_names[kind]);
        for (int l = 0; l < nl; l++) printf(" %.3g |", serial_ns[l] / 1e3);
        printf(" |\n");
        fflush(stdout);
    }
    j.n = (int64_t)1 << max_log2;
    free_job(&j);
}

/* The fixed cost of a loop on the pool: 2 items, nothing to do, worker spinning. */
static void empty_fn(void *ctx, int64_t b, int64_t e)
{
    (void)ctx;
    (void)b;
    (void)e;
}

static void bench_empty(void)
{
    enum { N = 2001 };
    static double t[N];
    print_load("Fixed cost of a 2-thread loop with nothing to do (worker spinning; 1 us between calls)");
    double best = 1e300;
    for (int i = 0; i < N; i++) {
        double t0 = now_ns();
        gd_pool_for(2, 2, 1, 1, empty_fn, NULL);
        t[i] = now_ns() - t0;
        best = MIN(best, t[i]);
        pause_ns(GAP_NS);
    }
    char a[32], b[32];
    fmt_time(a, sizeof a, median(t, N));
    fmt_time(b, sizeof b, best);
    printf("median %s, fastest %s over %d calls\n", a, b, N);
}

int main(int argc, char **argv)
{
    const int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const int nt = cores > 1 ? (int)cores : 2;
    static const int64_t sides[] = {200, 400, 1000, 2000, 4000};
    const int nsides = quick ? 3 : 5, max_log2 = quick ? 18 : 22;
    char model[256] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    for (char line[256]; f && fgets(line, sizeof line, f);)
        if (strncmp(line, "model name", 10) == 0) {
            snprintf(model, sizeof model, "%s", strchr(line, ':') ? strchr(line, ':') + 2 : line);
            model[strcspn(model, "\n")] = 0;
            break;
        }
    if (f) fclose(f);
    printf("bench_pool%s: %s, %ld cores; every figure is a median of %d repeats; other processes on this "
           "machine add noise (see the load averages)\n",
#ifdef GD_POOL_TEST_HOOKS
           " (pool back-off off)",
#else
           "",
#endif
           model, cores, REPEATS);

    if (argc > 1 && strcmp(argv[1], "sweep") == 0) {
        bench_break_even(nt, "no busy processes started", max_log2);
        return 0;
    }
    bench_wake(quick ? 51 : 201);
    bench_empty();
    if (argc > 1 && strcmp(argv[1], "wake") == 0) return 0;

    const int loads[] = {0, (int)cores, (int)cores - 1};
    for (int li = 0; li < 3; li++) {
        if (li > 0 && loads[li] < 1) continue;
        char load[64];
        if (loads[li] == 0)
            snprintf(load, sizeof load, "no busy processes started");
        else
            snprintf(load, sizeof load, "%d busy processes", loads[li]);
        busy_start(loads[li], 3600);
        if (loads[li] > 0) sleep_ns(200e6); /* let the scheduler spread them */
        bench_table(K_ADD, nt, sides, nsides, load);
        bench_table(K_SUM, nt, sides, nsides, load);
        bench_break_even(nt, load, max_log2);
        busy_stop();
    }
    return sink == 12345.678 ? 1 : 0; /* keeps the sums alive */
}
