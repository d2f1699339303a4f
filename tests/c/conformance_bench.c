/* conformance_bench.c - `--bench`: timings of the operations gpudev's performance targets are
 * about, measured through the backend's table in this process: small-operation overhead,
 * sums, elementwise, copies, transposes, matrix products (single, batched), random numbers
 * and host transfers. Each figure is the median of several runs, each closed by synchronize,
 * so queued GPU work is counted. Sizes suit a host (cpu) or a GPU (any other backend).
 * `--bench tiny` stops after the small operations.
 */
#include "conformance.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct bench_scale {
    int64_t n;      /* float32 elements of the big vectors */
    int64_t side;   /* square matrices for transposes and broadcasts */
    int gemm[3];    /* sgemm sizes */
} bench_scale;

static const bench_scale host_scale = {100000000, 4000, {1000, 2000, 4000}};
static const bench_scale gpu_scale = {(int64_t)1 << 28, 16384, {1000, 4096, 8192}};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* seconds per call of `stmt`: median of `reps` runs of `inner` calls, each run synchronized */
#define TIME(result, reps, inner, stmt)                                                          \
    do {                                                                                         \
        double ts_[16];                                                                          \
        stmt;                                                                                    \
        gdt_sync();                                                                              \
        for (int r_ = 0; r_ < (reps); r_++) {                                                    \
            double t0_ = gdt_now();                                                              \
            for (int i_ = 0; i_ < (inner); i_++) stmt;                                           \
            gdt_sync();                                                                          \
            ts_[r_] = (gdt_now() - t0_) / (inner);                                               \
        }                                                                                        \
        qsort(ts_, (size_t)(reps), sizeof(double), cmp_double);                                  \
        (result) = ts_[(reps) / 2];                                                              \
    } while (0)

void gdt_bench_row(double value, const char *unit, const char *fmt, ...)
{
    char label[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(label, sizeof label, fmt, ap);
    va_end(ap);
    printf("%-40s %10.2f %s\n", label, value, unit);
}

static gd_ewise flat(int64_t n)
{
    gd_ewise ew = {.ndim = 1, .contiguous = 1, .size = n, .shape = {n}};
    return ew;
}

static gd_operand arr(const void *p, int64_t s0, int64_t s1)
{
    gd_operand o;
    memset(&o, 0, sizeof o);
    o.data = p;
    o.strides[0] = s0, o.strides[1] = s1;
    return o;
}

static void bench_tiny(void)
{
    const gd_backend *b = gdt_be;
    const int d = gdt_dev;
    void *x = gdt_alloc(64), *s = gdt_alloc(8);
    gd_ewise ew = flat(16);
    gd_operand ox = arr(x, 1, 0);
    float item = 0;
    double t;
    OK(b->arange(x, GD_FLOAT32, (gd_scalar){.f = 0}, (gd_scalar){.f = 1e-30}, 16, d, &gdt_err));
    TIME(t, 7, 20000, b->binary(x, GD_ADD, GD_FLOAT32, &ew, &ox, &ox, d, &gdt_err));
    gdt_bench_row(t * 1e9, "ns per call", "b += b (4x4 float32)");
    TIME(t, 7, 20000, b->reduce(s, GD_FLOAT32, GD_RED_SUM, x, GD_FLOAT32, 1, 16, 1, d, &gdt_err));
    gdt_bench_row(t * 1e9, "ns per call", "sum (4x4 float32)");
    TIME(t, 7, 2000, (b->reduce(s, GD_FLOAT32, GD_RED_SUM, x, GD_FLOAT32, 1, 16, 1, d, &gdt_err),
                      b->copy_to_host(&item, s, d, 4, &gdt_err)));
    gdt_bench_row(t * 1e9, "ns per call", "sum + copy to host (a.sum().item())");
    gdt_free(x, 64);
    gdt_free(s, 8);
}

static void bench_vectors(const bench_scale *sc)
{
    const gd_backend *b = gdt_be;
    const int d = gdt_dev;
    const int64_t n = sc->n, side = sc->side;
    const double gb = 4.0 * (double)n / 1e9;
    void *x = gdt_alloc((size_t)n * 4), *y = gdt_alloc((size_t)n * 4), *s = gdt_alloc(8);
    double t;
    TIME(t, 5, 1, b->random(x, GD_FLOAT32, GD_RAND_NORMAL, 1, 0, n, d, &gdt_err));
    gdt_bench_row(gb / t, "GB/s written", "randn, %.2g float32", (double)n);
    TIME(t, 7, 1, b->reduce(s, GD_FLOAT32, GD_RED_SUM, x, GD_FLOAT32, 1, n, 1, d, &gdt_err));
    gdt_bench_row(gb / t, "GB/s", "sum, %.2g float32", (double)n);
    TIME(t, 7, 1, b->reduce(s, GD_FLOAT64, GD_RED_SUMSQ, x, GD_FLOAT32, 1, n, 1, d, &gdt_err));
    gdt_bench_row(gb / t, "GB/s", "sum of squares, %.2g float32", (double)n);
    TIME(t, 5, 1, b->reduce(y, GD_FLOAT32, GD_RED_SUM, x, GD_FLOAT32, 1, n / 10000, 10000, d, &gdt_err));
    gdt_bench_row(gb / t, "GB/s", "sum over axis 0 of (%lld, 10000)", (long long)(n / 10000));
    TIME(t, 5, 1, b->reduce(y, GD_FLOAT32, GD_RED_SUM, x, GD_FLOAT32, n / 10000, 10000, 1, d, &gdt_err));
    gdt_bench_row(gb / t, "GB/s", "sum over axis 1 of (%lld, 10000)", (long long)(n / 10000));
    TIME(t, 5, 1, b->reduce(y, GD_FLOAT32, GD_RED_SUM, x, GD_FLOAT32, 1, n / 4, 4, d, &gdt_err));
    gdt_bench_row(gb / t, "GB/s", "sum over axis 0 of (%lld, 4)", (long long)(n / 4));

    gd_ewise ew = flat(n);
    gd_operand ox = arr(x, 1, 0), oy = arr(y, 1, 0);
    TIME(t, 5, 1, b->binary(y, GD_ADD, GD_FLOAT32, &ew, &ox, &ox, d, &gdt_err));
    gdt_bench_row(2 * gb / t, "GB/s read + written", "y = x + x");
    TIME(t, 5, 1, b->binary(y, GD_ADD, GD_FLOAT32, &ew, &oy, &ox, d, &gdt_err));
    gdt_bench_row(3 * gb / t, "GB/s read + written", "y += x");
    TIME(t, 5, 1, b->copy_device(y, d, x, d, (size_t)n * 4, &gdt_err));
    gdt_bench_row(2 * gb / t, "GB/s read + written", "copy on the device");

    gd_ewise ewb = {.ndim = 2, .contiguous = 0, .size = side * side, .shape = {side, side}, .out_strides = {side, 1}};
    gd_operand row = arr(x, 0, 1), col = arr(x, 1, 0);
    TIME(t, 5, 1, b->binary(y, GD_ADD, GD_FLOAT32, &ewb, &row, &col, d, &gdt_err));
    gdt_bench_row(4.0 * (double)(side * side) / t / 1e9, "GB/s written", "broadcast add (%lld,1) + (1,%lld)",
                  (long long)side, (long long)side);
    int64_t shape2[2] = {side, side}, shape3[3] = {100, 400, 400};
    int perm2[2] = {1, 0}, perm3[3] = {0, 2, 1};
    double tc;
    TIME(t, 5, 1, b->permute(y, GD_FLOAT32, x, 2, shape2, perm2, d, &gdt_err));
    TIME(tc, 5, 1, b->copy_device(y, d, x, d, (size_t)(side * side) * 4, &gdt_err));
    gdt_bench_row(t * 1e3, "ms", "transpose %lldx%lld float32", (long long)side, (long long)side);
    gdt_bench_row(tc * 1e3, "ms", "  a copy of it, for comparison");
    TIME(t, 5, 1, b->permute(y, GD_FLOAT32, x, 3, shape3, perm3, d, &gdt_err));
    gdt_bench_row(t * 1e3, "ms", "permute (0,2,1) of (100,400,400)");
    gdt_free(x, (size_t)n * 4);
    gdt_free(y, (size_t)n * 4);
    gdt_free(s, 8);
}

static void bench_products(const bench_scale *sc)
{
    const gd_backend *b = gdt_be;
    const int d = gdt_dev;
    double t;
    for (int i = 0; i < 3; i++) {
        const int64_t m = sc->gemm[i];
        size_t bytes = (size_t)(m * m) * 4;
        void *a = gdt_alloc(bytes), *c = gdt_alloc(bytes);
        OK(b->random(a, GD_FLOAT32, GD_RAND_NORMAL, 2, 0, m * m, d, &gdt_err));
        gd_matrix ma = {a, 0, m, 0};
        TIME(t, 5, 1, b->gemm(c, GD_FLOAT32, &ma, &ma, 1, m, m, m, 0, d, &gdt_err));
        gdt_bench_row(2.0 * (double)(m * m * m) / t / 1e9, "GFLOP/s", "sgemm n=%lld", (long long)m);
        gdt_free(a, bytes);
        gdt_free(c, bytes);
    }
    for (int m = 100; m >= 16; m = m == 100 ? 16 : 0) {
        const int64_t p = 1000, e = (int64_t)m * m;
        size_t bytes = (size_t)(p * e) * 4;
        void *a = gdt_alloc(bytes), *c = gdt_alloc(bytes);
        OK(b->random(a, GD_FLOAT32, GD_RAND_NORMAL, 3, 0, p * e, d, &gdt_err));
        gd_matrix ma = {a, 0, m, e};
        TIME(t, 7, 1, b->gemm(c, GD_FLOAT32, &ma, &ma, p, m, m, m, e, d, &gdt_err));
        gdt_bench_row(t * 1e3, "ms", "1000 x (%dx%d) @ (%dx%d), one batched call", m, m, m, m);
        gdt_free(a, bytes);
        gdt_free(c, bytes);
    }
}

static void bench_transfers(void)
{
    const size_t bytes = (size_t)256 << 20;
    char *host = gdt_host_bytes(bytes);
    memset(host, 1, bytes); /* pages faulted in: the copies, not the first touch, are timed */
    void *dev = gdt_alloc(bytes);
    double t;
    TIME(t, 5, 1, gdt_be->copy_from_host(dev, gdt_dev, host, bytes, &gdt_err));
    gdt_bench_row((double)bytes / t / 1e9, "GB/s (pageable host memory)", "host -> device, 256 MiB");
    TIME(t, 5, 1, gdt_be->copy_to_host(host, dev, gdt_dev, bytes, &gdt_err));
    gdt_bench_row((double)bytes / t / 1e9, "GB/s (pageable host memory)", "device -> host, 256 MiB");
    gdt_free(dev, bytes);
    free(host);
}

void gdt_bench(int tiny)
{
    const bench_scale *sc = strcmp(gdt_be->name, "cpu") == 0 ? &host_scale : &gpu_scale;
    printf("%s backend, device %d\n", gdt_be->name, gdt_dev);
    if (gdt_be->device_props) {
        gd_device_props p;
        if (OK(gdt_be->device_props(&p, gdt_dev, &gdt_err))) printf("%.200s\n", p.name);
    }
    bench_tiny();
    if (tiny) return;
    bench_vectors(sc);
    bench_products(sc);
    bench_transfers();
    if (gdt_failures) printf("%ld calls failed while timing: the figures above are not to be trusted\n", gdt_failures);
}
