/* test_backend_cpu.c - standalone test of the CPU backend's vtable against plain reference
 * loops, plus `--bench` timings of the figures the foundation issue tracks.
 *
 * Build and run with tests/c/Makefile (`make -C tests/c test`, `sanitize`, `bench`). Exit
 * status 0 when every check passes; each failure prints its file:line and values.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>

#include "backend_cpu.h"
#include "philox.h"

/* ------------------------------------------------------------------------------------------
 * harness
 * ---------------------------------------------------------------------------------------- */

static int g_checks, g_failures;
static const gd_backend *B = &gd_cpu_backend;

#define CHECK(cond, ...)                                                                         \
    do {                                                                                         \
        g_checks++;                                                                              \
        if (!(cond)) {                                                                           \
            g_failures++;                                                                        \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);             \
            fprintf(stderr, __VA_ARGS__);                                                        \
            fputc('\n', stderr);                                                                 \
        }                                                                                        \
    } while (0)

static gd_error g_err; /* what the calls under OK() report into */

#define OK(call)                                                                                 \
    do {                                                                                         \
        int rc_ = (call);                                                                        \
        CHECK(rc_ == GD_OK, "%s returned %d: %s", #call, rc_, g_err.message);                    \
    } while (0)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* xorshift: reproducible test data */
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd_u64(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}
static double rnd_unit(void) { return (double)(rnd_u64() >> 11) * 0x1p-53; }
static double rnd_normal(void)
{
    double u1 = rnd_unit(), u2 = rnd_unit();
    return sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
}

static void *xalloc(size_t n)
{
    void *p = NULL;
    int rc = B->alloc(&p, 0, n, &g_err);
    if (rc != GD_OK || !p) {
        fprintf(stderr, "allocation of %zu bytes failed: %s\n", n, g_err.message);
        exit(2);
    }
    return p;
}
static void xfree(void *p, size_t n) { B->free(p, 0, n); }

static size_t esz(gd_dtype t) { return gd_dtype_size(t); }

/* element i of a buffer of dtype t, as double (int64 values in tests stay exact) */
static double get(const void *p, gd_dtype t, int64_t i)
{
    if (t == GD_FLOAT32) return ((const float *)p)[i];
    if (t == GD_FLOAT64) return ((const double *)p)[i];
    return (double)((const int64_t *)p)[i];
}

static void fill_random(void *p, gd_dtype t, int64_t n, double scale)
{
    for (int64_t i = 0; i < n; i++) {
        double v = rnd_normal() * scale;
        if (t == GD_FLOAT32)
            ((float *)p)[i] = (float)v;
        else if (t == GD_FLOAT64)
            ((double *)p)[i] = v;
        else
            ((int64_t *)p)[i] = (int64_t)llround(v);
    }
}

/* bitwise-equal, or both NaN */
static int same_f64(double a, double b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0; }
static int same_f32(float a, float b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0; }

static int same_elem(const void *x, const void *y, gd_dtype t, int64_t i)
{
    if (t == GD_FLOAT32) return same_f32(((const float *)x)[i], ((const float *)y)[i]);
    if (t == GD_FLOAT64) return same_f64(((const double *)x)[i], ((const double *)y)[i]);
    return ((const int64_t *)x)[i] == ((const int64_t *)y)[i];
}

/* index of the first differing element, or -1 */
static int64_t first_diff(const void *x, const void *y, gd_dtype t, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!same_elem(x, y, t, i)) return i;
    return -1;
}

static const char *dtname(gd_dtype t) { return t == GD_FLOAT32 ? "float32" : t == GD_FLOAT64 ? "float64" : "int64"; }

/* ------------------------------------------------------------------------------------------
 * Philox: Random123 known answers, and philox.h against an independent implementation
 * ---------------------------------------------------------------------------------------- */

/* Philox4x32-R written from the paper's description with a full 4-word counter: key
 * schedule bumped before rounds 2..R, unlike philox.h's bump after every round. */
static void ref_philox4x32(uint32_t out[4], const uint32_t ctr_in[4], const uint32_t key_in[2], int rounds)
{
    uint32_t c[4] = {ctr_in[0], ctr_in[1], ctr_in[2], ctr_in[3]}, k[2] = {key_in[0], key_in[1]};
    for (int r = 0; r < rounds; r++) {
        if (r > 0) {
            k[0] += 0x9E3779B9u;
            k[1] += 0xBB67AE85u;
        }
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n[4] = {(uint32_t)(p1 >> 32) ^ c[1] ^ k[0], (uint32_t)p1, (uint32_t)(p0 >> 32) ^ c[3] ^ k[1],
                         (uint32_t)p0};
        memcpy(c, n, sizeof c);
    }
    memcpy(out, c, sizeof c);
}

static void test_philox(void)
{
    /* Random123 kat_vectors, "philox4x32 10": counter[4] key[2] -> output[4] */
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e,
         0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb,
         0x5001e420, 0x24126ea1},
    };
    for (int v = 0; v < 3; v++) {
        uint32_t out[4];
        ref_philox4x32(out, kat[v], kat[v] + 4, 10);
        CHECK(memcmp(out, kat[v] + 6, sizeof out) == 0, "reference Philox misses Random123 vector %d", v);
    }
    /* philox.h's counter is (lo, hi, 0, 0): the first vector applies directly */
    uint32_t w[4];
    gd_philox4x32_10(w, 0, 0);
    CHECK(w[0] == 0x6627e8d5u && w[1] == 0xe169c58du && w[2] == 0xbc57ac4cu && w[3] == 0x9b00dbd8u,
          "philox(0, 0) = %08x %08x %08x %08x", w[0], w[1], w[2], w[3]);
    int mismatches = 0;
    for (int t = 0; t < 10000; t++) {
        uint64_t counter = t < 5000 ? rnd_u64() : (uint64_t)t, seed = t % 3 == 0 ? (uint64_t)t : rnd_u64();
        uint32_t ctr[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), 0, 0};
        uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, ref[4];
        ref_philox4x32(ref, ctr, key, 10);
        gd_philox4x32_10(w, counter, seed);
        mismatches += memcmp(ref, w, sizeof w) != 0;
    }
    CHECK(mismatches == 0, "philox.h differs from the reference on %d of 10000 (counter, seed) pairs", mismatches);
}

/* ------------------------------------------------------------------------------------------
 * devices, memory, copies, threads
 * ---------------------------------------------------------------------------------------- */

static void test_device_and_memory(void)
{
    CHECK(B->abi_version == GD_BACKEND_ABI_VERSION, "abi %d", B->abi_version);
    CHECK(strcmp(B->name, "cpu") == 0, "name %s", B->name);
    CHECK(B->device_count() == 1, "device_count %d", B->device_count());
    CHECK(B->synchronize == NULL || B->synchronize(0, &g_err) == GD_OK, "synchronize");
    const void *const entries[] = {B->alloc, B->free, B->copy_from_host, B->copy_to_host, B->copy_device,
                                   B->copy_2d, B->unary, B->binary, B->astype, B->reduce, B->gemm,
                                   B->permute, B->arange, B->random};
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) CHECK(entries[i] != NULL, "entry %zu", i);

    int64_t s0[4], s1[4], s2[4];
    gd_cpu_memory_stats(s0);
    void *z = NULL;
    OK(B->alloc(&z, 0, 0, &g_err));
    CHECK(z != NULL, "alloc(0) gave NULL");
    B->free(z, 0, 0);
    B->free(NULL, 0, 0);

    size_t sizes[] = {1, 7, 64, 1000, (size_t)4 << 20, ((size_t)4 << 20) + 3};
    void *ptrs[6];
    size_t total = 0;
    for (int i = 0; i < 6; i++) {
        ptrs[i] = xalloc(sizes[i]);
        size_t align = sizes[i] >= ((size_t)4 << 20) ? ((size_t)2 << 20) : 64;
        CHECK((uintptr_t)ptrs[i] % align == 0, "alloc(%zu) = %p not %zu-aligned", sizes[i], ptrs[i], align);
        memset(ptrs[i], 0xab, sizes[i]); /* writable over the whole size (ASan checks the end) */
        total += sizes[i];
    }
    gd_cpu_memory_stats(s1);
    CHECK(s1[0] - s0[0] == (int64_t)total, "allocated grew by %lld, expected %zu", (long long)(s1[0] - s0[0]), total);
    CHECK(s1[2] - s0[2] == 6, "allocations grew by %lld", (long long)(s1[2] - s0[2]));
    CHECK(s1[3] - s0[3] >= (int64_t)total, "reserved grew by %lld < %zu", (long long)(s1[3] - s0[3]), total);
    CHECK(s1[1] >= s1[0], "peak %lld < allocated %lld", (long long)s1[1], (long long)s1[0]);
    for (int i = 0; i < 6; i++) xfree(ptrs[i], sizes[i]);
    gd_cpu_memory_stats(s2);
    CHECK(s2[0] == s0[0] && s2[2] == s0[2] && s2[3] == s0[3], "counters not back: %lld %lld %lld",
          (long long)s2[0], (long long)s2[2], (long long)s2[3]);
    CHECK(s2[1] == s1[1], "peak moved on free");
    gd_cpu_reset_peak();
    gd_cpu_memory_stats(s2);
    CHECK(s2[1] == s2[0], "reset_peak: peak %lld allocated %lld", (long long)s2[1], (long long)s2[0]);

    /* a request no machine can meet fails with a message, never a crash */
    void *huge = NULL;
    gd_error err = {0};
    int rc = B->alloc(&huge, 0, (size_t)1 << 62, &err);
    CHECK(rc == GD_ERR_HOST_OOM && err.code == GD_ERR_HOST_OOM && huge == NULL, "huge alloc rc %d", rc);
    CHECK(strstr(err.message, "out of host memory allocating 4.0 EiB") != NULL, "message: %s", err.message);
    rc = B->alloc(&huge, 0, SIZE_MAX - 10, &err);
    CHECK(rc == GD_ERR_HOST_OOM, "SIZE_MAX alloc rc %d", rc);
}

static void test_copies(void)
{
    enum { N = 1000 };
    unsigned char host[N], back[N];
    for (int i = 0; i < N; i++) host[i] = (unsigned char)rnd_u64();
    unsigned char *d1 = xalloc(N), *d2 = xalloc(N);
    OK(B->copy_from_host(d1, 0, host, N, &g_err));
    OK(B->copy_device(d2, 0, d1, 0, N, &g_err));
    OK(B->copy_to_host(back, d2, 0, N, &g_err));
    CHECK(memcmp(host, back, N) == 0, "host -> device -> device -> host round trip differs");
    OK(B->copy_from_host(d1, 0, host, 0, &g_err));

    /* 2-D: 7 rows of 13 bytes, source pitch 29, destination pitch 17 */
    memset(d2, 0, N);
    OK(B->copy_2d(d2, 17, d1, 29, 13, 7, 0, &g_err));
    int bad = 0;
    for (int r = 0; r < 7; r++)
        for (int c = 0; c < 17; c++) bad += d2[r * 17 + c] != (c < 13 ? d1[r * 29 + c] : 0);
    CHECK(bad == 0, "copy_2d pitched: %d wrong bytes", bad);
    OK(B->copy_2d(d2, 40, d1, 40, 40, 20, 0, &g_err));
    CHECK(memcmp(d2, d1, 800) == 0, "copy_2d with equal pitches");
    xfree(d1, N);
    xfree(d2, N);
}

static void test_threads_and_facts(void)
{
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    int cores = CPU_COUNT(&set);
    CHECK(gd_cpu_get_num_threads() == cores, "default threads %d, affinity mask has %d", gd_cpu_get_num_threads(),
          cores);
    gd_cpu_set_num_threads(1);
    CHECK(gd_cpu_get_num_threads() == 1 && scipy_openblas_get_num_threads() == 1, "set 1: %d / blas %d",
          gd_cpu_get_num_threads(), scipy_openblas_get_num_threads());
    gd_cpu_set_num_threads(0);
    CHECK(gd_cpu_get_num_threads() == 1, "set 0 clamps to 1: %d", gd_cpu_get_num_threads());
    gd_cpu_set_num_threads(cores);
    CHECK(gd_cpu_get_num_threads() == cores && scipy_openblas_get_num_threads() == cores, "set back %d / blas %d",
          gd_cpu_get_num_threads(), scipy_openblas_get_num_threads());
    const char *simd = gd_cpu_simd_level();
    CHECK(!strcmp(simd, "avx512f") || !strcmp(simd, "avx2") || !strcmp(simd, "neon") || !strcmp(simd, "baseline"),
          "simd %s", simd);
    CHECK(strstr(gd_cpu_blas_config(), "OpenBLAS") != NULL, "blas config %s", gd_cpu_blas_config());
}

/* ------------------------------------------------------------------------------------------
 * elementwise: every op and dtype, contiguous, scalar and broadcast N-d operands
 * ---------------------------------------------------------------------------------------- */

static int64_t wrap_u(uint64_t v) { return (int64_t)v; }

static int64_t ref_ipow(int64_t b, int64_t e)
{
    uint64_t r = 1;
    for (int64_t i = 0; i < e; i++) r *= (uint64_t)b; /* e stays small in the tests */
    return (int64_t)r;
}

/* reference unary, on element values */
static double ref_un_f(gd_unop op, double x, int f32)
{
#define F1(ff, fd) (f32 ? (double)ff((float)x) : fd(x))
    switch (op) {
    case GD_COPY: return x;
    case GD_NEG: return -x;
    case GD_ABS: return fabs(x);
    case GD_RELU: return isnan(x) ? x : x > 0 ? x : 0.0;
    case GD_EXP: return F1(expf, exp);
    case GD_LOG: return F1(logf, log);
    case GD_SQRT: return F1(sqrtf, sqrt);
    case GD_TANH: return F1(tanhf, tanh);
    case GD_SQUARE: return f32 ? (double)((float)x * (float)x) : x * x;
    default: return NAN;
    }
#undef F1
}

static int64_t ref_un_i(gd_unop op, int64_t x)
{
    switch (op) {
    case GD_COPY: return x;
    case GD_NEG: return wrap_u(0 - (uint64_t)x);
    case GD_ABS: return x < 0 ? wrap_u(0 - (uint64_t)x) : x;
    case GD_RELU: return x > 0 ? x : 0;
    case GD_SQUARE: return wrap_u((uint64_t)x * (uint64_t)x);
    default: return 0;
    }
}

static double ref_bin_f(gd_binop op, double x, double y, int f32)
{
    if (f32) {
        float a = (float)x, b = (float)y;
        switch (op) {
        case GD_ADD: return a + b;
        case GD_SUB: return a - b;
        case GD_MUL: return a * b;
        case GD_DIV: return a / b;
        case GD_POW: return powf(a, b);
        case GD_MAXIMUM: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
        case GD_MINIMUM: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
        default: return NAN;
        }
    }
    switch (op) {
    case GD_ADD: return x + y;
    case GD_SUB: return x - y;
    case GD_MUL: return x * y;
    case GD_DIV: return x / y;
    case GD_POW: return pow(x, y);
    case GD_MAXIMUM: return isnan(x) || isnan(y) ? NAN : x > y ? x : y;
    case GD_MINIMUM: return isnan(x) || isnan(y) ? NAN : x < y ? x : y;
    default: return NAN;
    }
}

static int64_t ref_bin_i(gd_binop op, int64_t x, int64_t y)
{
    switch (op) {
    case GD_ADD: return wrap_u((uint64_t)x + (uint64_t)y);
    case GD_SUB: return wrap_u((uint64_t)x - (uint64_t)y);
    case GD_MUL: return wrap_u((uint64_t)x * (uint64_t)y);
    case GD_POW: return ref_ipow(x, y);
    case GD_MAXIMUM: return x > y ? x : y;
    case GD_MINIMUM: return x < y ? x : y;
    default: return 0;
    }
}

static void put(void *p, gd_dtype t, int64_t i, double fv, int64_t iv)
{
    if (t == GD_FLOAT32)
        ((float *)p)[i] = (float)fv;
    else if (t == GD_FLOAT64)
        ((double *)p)[i] = fv;
    else
        ((int64_t *)p)[i] = iv;
}

/* Test values with the edge cases each dtype has. */
static void fill_edge(void *p, gd_dtype t, int64_t n, int positive_small)
{
    static const double fedge[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, INFINITY, -INFINITY, NAN, 1e-30, 3.5, -7.25};
    static const int64_t iedge[] = {0, 1, -1, 2, -2, INT64_MAX, INT64_MIN, 3, 1000003, -77};
    for (int64_t i = 0; i < n; i++) {
        if (positive_small) { /* exponents for integer pow */
            put(p, t, i, (double)(i % 9), i % 9);
        } else if (t == GD_INT64) {
            int64_t v = i < 10 ? iedge[i] : (int64_t)(rnd_u64() % 2001) - 1000;
            put(p, t, i, 0, v);
        } else {
            double v = i < 12 ? fedge[i] : rnd_normal() * 4;
            put(p, t, i, v, 0);
        }
    }
}

typedef struct shape_case {
    int ndim;
    int64_t out[4], a[4], b[4]; /* operand shapes: same ndim, 1 = broadcast */
} shape_case;

static void set_operand(gd_operand *op, const void *data, const int64_t *oshape, const int64_t *shape, int ndim)
{
    memset(op, 0, sizeof *op);
    op->data = data;
    int64_t s = 1;
    for (int k = ndim - 1; k >= 0; k--) {
        op->strides[k] = shape[k] == 1 && oshape[k] != 1 ? 0 : s;
        s *= shape[k];
    }
}

static int64_t operand_offset(const gd_operand *op, const int64_t *oshape, int ndim, int64_t flat)
{
    int64_t off = 0;
    for (int k = ndim - 1; k >= 0; k--) {
        off += (flat % oshape[k]) * op->strides[k];
        flat /= oshape[k];
    }
    return off;
}

static int64_t prod(const int64_t *s, int n)
{
    int64_t p = 1;
    for (int k = 0; k < n; k++) p *= s[k];
    return p;
}

static void test_elementwise(void)
{
    const shape_case cases[] = {
        {1, {1}, {1}, {1}},
        {1, {7}, {7}, {7}},
        {2, {3, 5}, {3, 5}, {1, 5}},
        {2, {3, 5}, {3, 1}, {3, 5}},
        {3, {3, 4, 5}, {3, 1, 5}, {1, 4, 5}},
        {3, {2, 3, 7}, {2, 3, 7}, {1, 1, 1}},
        {4, {2, 3, 4, 5}, {2, 1, 4, 1}, {1, 3, 1, 5}},
        {2, {130, 1031}, {130, 1031}, {1, 1031}}, /* above the thread threshold, strided */
        {1, {140001}, {140001}, {140001}},     /* above the thread threshold, contiguous */
    };
    const int ncases = sizeof cases / sizeof cases[0];
    int tested = 0;
    for (int dt = 0; dt < GD_NUM_DTYPES; dt++) {
        gd_dtype t = (gd_dtype)dt;
        for (int ci = 0; ci < ncases; ci++) {
            const shape_case *c = &cases[ci];
            int64_t n = prod(c->out, c->ndim), na = prod(c->a, c->ndim), nb = prod(c->b, c->ndim);
            int contiguous = na == n && nb == n;
            gd_ewise ew = {.ndim = c->ndim, .contiguous = contiguous, .size = n};
            memcpy(ew.shape, c->out, sizeof(int64_t) * (size_t)c->ndim);
            void *a = xalloc((size_t)na * esz(t)), *b = xalloc((size_t)nb * esz(t));
            void *out = xalloc((size_t)n * esz(t)), *ref = malloc((size_t)n * esz(t));
            fill_edge(a, t, na, 0);

            for (int op = 0; op < GD_NUM_UNOPS; op++) {
                if (t == GD_INT64 && (op == GD_EXP || op == GD_LOG || op == GD_SQRT || op == GD_TANH)) continue;
                for (int scalar = 0; scalar < 2; scalar++) {
                    gd_operand oa;
                    set_operand(&oa, scalar ? NULL : a, c->out, c->a, c->ndim);
                    if (scalar) {
                        if (t == GD_INT64)
                            oa.scalar.i = -5;
                        else
                            oa.scalar.f = 2.5;
                    }
                    OK(B->unary(out, (gd_unop)op, t, &ew, &oa, 0, &g_err));
                    for (int64_t i = 0; i < n; i++) {
                        int64_t off = operand_offset(&oa, c->out, c->ndim, i);
                        if (t == GD_INT64)
                            put(ref, t, i, 0, ref_un_i((gd_unop)op, scalar ? oa.scalar.i : ((int64_t *)a)[off]));
                        else
                            put(ref, t, i,
                                ref_un_f((gd_unop)op, scalar ? oa.scalar.f : get(a, t, off), t == GD_FLOAT32), 0);
                    }
                    int64_t d = first_diff(out, ref, t, n);
                    CHECK(d < 0, "unary op %d %s case %d scalar %d: element %lld is %g, expected %g", op, dtname(t),
                          ci, scalar, (long long)d, get(out, t, d < 0 ? 0 : d), get(ref, t, d < 0 ? 0 : d));
                    tested++;
                }
            }

            for (int op = 0; op < GD_NUM_BINOPS; op++) {
                if (t == GD_INT64 && op == GD_DIV) continue;
                fill_edge(b, t, nb, t == GD_INT64 && op == GD_POW);
                for (int form = 0; form < 3; form++) { /* arrays; b scalar; a scalar */
                    gd_operand oa, ob;
                    set_operand(&oa, form == 2 ? NULL : a, c->out, c->a, c->ndim);
                    set_operand(&ob, form == 1 ? NULL : b, c->out, c->b, c->ndim);
                    if (t == GD_INT64) {
                        oa.scalar.i = -3;
                        ob.scalar.i = op == GD_POW ? 5 : 7;
                    } else {
                        oa.scalar.f = -1.5;
                        ob.scalar.f = op == GD_POW ? 2.0 : 0.75; /* ** 2 takes the square path */
                    }
                    gd_ewise ew2 = ew;
                    ew2.contiguous = (form == 2 || na == n) && (form == 1 || nb == n);
                    OK(B->binary(out, (gd_binop)op, t, &ew2, &oa, &ob, 0, &g_err));
                    for (int64_t i = 0; i < n; i++) {
                        int64_t offa = operand_offset(&oa, c->out, c->ndim, i);
                        int64_t offb = operand_offset(&ob, c->out, c->ndim, i);
                        if (t == GD_INT64) {
                            int64_t x = form == 2 ? oa.scalar.i : ((int64_t *)a)[offa];
                            int64_t y = form == 1 ? ob.scalar.i : ((int64_t *)b)[offb];
                            put(ref, t, i, 0, ref_bin_i((gd_binop)op, x, y));
                        } else {
                            double x = form == 2 ? oa.scalar.f : get(a, t, offa);
                            double y = form == 1 ? ob.scalar.f : get(b, t, offb);
                            double r = op == GD_POW && form == 1 && y == 2.0
                                           ? ref_un_f(GD_SQUARE, x, t == GD_FLOAT32)
                                           : ref_bin_f((gd_binop)op, x, y, t == GD_FLOAT32);
                            put(ref, t, i, r, 0);
                        }
                    }
                    int64_t d = first_diff(out, ref, t, n);
                    CHECK(d < 0, "binary op %d %s case %d form %d: element %lld is %g, expected %g", op, dtname(t),
                          ci, form, (long long)d, get(out, t, d < 0 ? 0 : d), get(ref, t, d < 0 ? 0 : d));
                    tested++;
                }
            }

            /* in place: out aliases a (a += b) and b (b = a - b) */
            if (contiguous) {
                gd_operand oa, ob;
                set_operand(&oa, a, c->out, c->a, c->ndim);
                set_operand(&ob, b, c->out, c->b, c->ndim);
                fill_edge(b, t, nb, 0);
                for (int64_t i = 0; i < n; i++)
                    put(ref, t, i, ref_bin_f(GD_ADD, get(a, t, i), get(b, t, i), t == GD_FLOAT32),
                        ref_bin_i(GD_ADD, t == GD_INT64 ? ((int64_t *)a)[i] : 0, t == GD_INT64 ? ((int64_t *)b)[i] : 0));
                OK(B->binary(a, GD_ADD, t, &ew, &oa, &ob, 0, &g_err));
                CHECK(first_diff(a, ref, t, n) < 0, "a += b in place, %s case %d", dtname(t), ci);
                OK(B->binary(a, GD_ADD, t, &ew, &oa, &oa, 0, &g_err)); /* b += b */
                for (int64_t i = 0; i < n; i++)
                    put(ref, t, i, ref_bin_f(GD_ADD, get(ref, t, i), get(ref, t, i), t == GD_FLOAT32),
                        ref_bin_i(GD_ADD, t == GD_INT64 ? ((int64_t *)ref)[i] : 0, t == GD_INT64 ? ((int64_t *)ref)[i] : 0));
                CHECK(first_diff(a, ref, t, n) < 0, "b += b in place, %s case %d", dtname(t), ci);
                tested += 2;
            }
            xfree(a, (size_t)na * esz(t));
            xfree(b, (size_t)nb * esz(t));
            xfree(out, (size_t)n * esz(t));
            free(ref);
        }
    }
    CHECK(tested > 500, "only %d elementwise cases ran", tested);

    /* specific values: IEEE division by zero, NaN through relu/max/min, int64 wrap */
    float fa[4] = {1.0f, -1.0f, 0.0f, NAN}, fb[4] = {0.0f, 0.0f, 0.0f, 1.0f}, fo[4];
    gd_ewise ew = {.ndim = 1, .contiguous = 1, .size = 4, .shape = {4}};
    gd_operand oa = {.data = fa}, ob = {.data = fb};
    OK(B->binary(fo, GD_DIV, GD_FLOAT32, &ew, &oa, &ob, 0, &g_err));
    CHECK(isinf(fo[0]) && fo[0] > 0 && isinf(fo[1]) && fo[1] < 0 && isnan(fo[2]) && isnan(fo[3]),
          "1/0, -1/0, 0/0: %g %g %g %g", fo[0], fo[1], fo[2], fo[3]);
    OK(B->binary(fo, GD_MAXIMUM, GD_FLOAT32, &ew, &ob, &oa, 0, &g_err));
    CHECK(isnan(fo[3]) && fo[0] == 1.0f, "maximum(1, NaN) = %g", fo[3]);
    OK(B->unary(fo, GD_RELU, GD_FLOAT32, &ew, &oa, 0, &g_err));
    CHECK(fo[0] == 1.0f && fo[1] == 0.0f && isnan(fo[3]), "relu: %g %g %g", fo[0], fo[1], fo[3]);
    int64_t ia[4] = {INT64_MIN, INT64_MAX, 3, -2}, ib[4] = {-1, 1, 40, 63}, io[4];
    oa.data = ia;
    ob.data = ib;
    OK(B->unary(io, GD_ABS, GD_INT64, &ew, &oa, 0, &g_err));
    CHECK(io[0] == INT64_MIN && io[3] == 2, "abs(INT64_MIN) = %" PRId64, io[0]);
    OK(B->unary(io, GD_NEG, GD_INT64, &ew, &oa, 0, &g_err));
    CHECK(io[0] == INT64_MIN && io[1] == -INT64_MAX, "-INT64_MIN = %" PRId64, io[0]);
    OK(B->binary(io, GD_ADD, GD_INT64, &ew, &oa, &ob, 0, &g_err));
    CHECK(io[0] == INT64_MAX && io[1] == INT64_MIN, "INT64_MIN + -1 = %" PRId64, io[0]);
    OK(B->binary(io, GD_POW, GD_INT64, &ew, &oa, &ob, 0, &g_err));
    CHECK(io[2] == wrap_u(12157665459056928801ull) && io[3] == INT64_MIN, "3**40 = %" PRId64 ", (-2)**63 = %" PRId64,
          io[2], io[3]);

    /* errors: int64 exp is the caller's to cast, an unknown op is refused */
    gd_error err = {0};
    CHECK(B->unary(io, GD_EXP, GD_INT64, &ew, &oa, 0, &err) == GD_ERR_VALUE && strstr(err.message, "exp"),
          "int64 exp: %s", err.message);
    CHECK(B->binary(io, (gd_binop)99, GD_INT64, &ew, &oa, &ob, 0, &err) == GD_ERR_VALUE, "unknown binop");
}

/* ------------------------------------------------------------------------------------------
 * astype
 * ---------------------------------------------------------------------------------------- */

static void test_astype(void)
{
    enum { N = 300001 }; /* threaded */
    for (int ti = 0; ti < GD_NUM_DTYPES; ti++)
        for (int to = 0; to < GD_NUM_DTYPES; to++) {
            gd_dtype in_t = (gd_dtype)ti, out_t = (gd_dtype)to;
            void *in = xalloc(N * esz(in_t)), *out = xalloc(N * esz(out_t)), *ref = malloc(N * esz(out_t));
            fill_edge(in, in_t, N, 0);
            for (int64_t i = 0; i < N; i++) {
                if (in_t == GD_INT64) {
                    int64_t v = ((int64_t *)in)[i];
                    put(ref, out_t, i, out_t == GD_FLOAT32 ? (double)(float)v : (double)v, v);
                } else {
                    double v = get(in, in_t, i);
                    int64_t iv = (isnan(v) || v >= 0x1p63 || v < -0x1p63) ? INT64_MIN : (int64_t)v;
                    put(ref, out_t, i, v, iv);
                }
            }
            OK(B->astype(out, out_t, in, in_t, N, 0, &g_err));
            int64_t d = first_diff(out, ref, out_t, N);
            CHECK(d < 0, "astype %s -> %s: element %lld", dtname(in_t), dtname(out_t), (long long)d);
            xfree(in, N * esz(in_t));
            xfree(out, N * esz(out_t));
            free(ref);
        }
    double special[5] = {NAN, INFINITY, -INFINITY, 1e19, -9.7};
    int64_t got[5];
    OK(B->astype(got, GD_INT64, special, GD_FLOAT64, 5, 0, &g_err));
    CHECK(got[0] == INT64_MIN && got[1] == INT64_MIN && got[2] == INT64_MIN && got[3] == INT64_MIN && got[4] == -9,
          "NaN/inf/out of range -> INT64_MIN, -9.7 -> -9: %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64,
          got[0], got[1], got[2], got[3], got[4]);
}

/* ------------------------------------------------------------------------------------------
 * reductions
 * ---------------------------------------------------------------------------------------- */

/* Reference over (outer, len, inner) in long double: refd gets float results unrounded,
 * refi int64 results, mag the sum of |terms| (what a summation error bound scales with). */
static void ref_reduce(double *refd, int64_t *refi, double *mag, gd_redop op, const void *in, gd_dtype in_t,
                       int64_t outer, int64_t len, int64_t inner)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            long double acc = op == GD_RED_MAX ? -INFINITY : op == GD_RED_MIN ? INFINITY : 0, m = 0;
            uint64_t iacc = op == GD_RED_MAX ? (uint64_t)INT64_MIN : op == GD_RED_MIN ? (uint64_t)INT64_MAX : 0;
            int nan = 0;
            for (int64_t r = 0; r < len; r++) {
                int64_t idx = (o * len + r) * inner + i;
                if (in_t == GD_INT64) {
                    int64_t v = ((const int64_t *)in)[idx];
                    if (op == GD_RED_SUM) iacc += (uint64_t)v;
                    if (op == GD_RED_SUMSQ) iacc += (uint64_t)v * (uint64_t)v;
                    if (op == GD_RED_MAX && v > (int64_t)iacc) iacc = (uint64_t)v;
                    if (op == GD_RED_MIN && v < (int64_t)iacc) iacc = (uint64_t)v;
                }
                long double v = get(in, in_t, idx), term = op == GD_RED_SUMSQ ? v * v : v;
                nan |= isnan((double)v);
                if (op == GD_RED_SUM || op == GD_RED_SUMSQ) acc += term;
                if (op == GD_RED_MAX && v > acc) acc = v;
                if (op == GD_RED_MIN && v < acc) acc = v;
                m += fabsl(term);
            }
            int64_t oi = o * inner + i;
            refd[oi] = nan && (op == GD_RED_MAX || op == GD_RED_MIN) ? NAN : (double)acc;
            refi[oi] = (int64_t)iacc;
            mag[oi] = (double)m;
        }
}

static void test_reduce(void)
{
    const int64_t shapes[][3] = {
        {1, 1, 1}, {1, 7, 1}, {3, 17, 1}, {5, 33, 7}, {2, 0, 3}, {1, 0, 1}, {4, 13, 1029}, /* two tiles */
        {1, 100003, 1},   /* blocks */
        {1000, 301, 1},   /* rows in parallel */
        {3, 20011, 5},    /* rows split into chunks */
        {1, 8193, 1030},  /* columns, split, two tiles */
        {2, 70, 5000},    /* columns, no split */
    };
    const int nshapes = sizeof shapes / sizeof shapes[0];
    int cases = 0;
    for (int s = 0; s < nshapes; s++) {
        int64_t outer = shapes[s][0], len = shapes[s][1], inner = shapes[s][2], n = outer * len * inner;
        for (int ti = 0; ti < GD_NUM_DTYPES; ti++) {
            gd_dtype in_t = (gd_dtype)ti;
            if (n > 4000000 && in_t != GD_FLOAT32) continue; /* the big case once: its reference is slow */
            void *in = xalloc((size_t)n * esz(in_t));
            fill_random(in, in_t, n, in_t == GD_INT64 ? 1000.0 : 1.0);
            for (int op = 0; op < GD_NUM_REDOPS; op++) {
                if (len == 0 && (op == GD_RED_MAX || op == GD_RED_MIN)) continue;
                for (int of = 0; of < 2; of++) {
                    gd_dtype out_t = of ? GD_FLOAT64 : in_t;
                    if (of && in_t == GD_FLOAT64) continue;
                    int64_t no = outer * inner;
                    void *out = xalloc((size_t)no * esz(out_t));
                    double *refd = malloc((size_t)no * sizeof(double)), *mag = malloc((size_t)no * sizeof(double));
                    int64_t *refi = malloc((size_t)no * sizeof(int64_t));
                    OK(B->reduce(out, out_t, (gd_redop)op, in, in_t, outer, len, inner, 0, &g_err));
                    ref_reduce(refd, refi, mag, (gd_redop)op, in, in_t, outer, len, inner);
                    int64_t bad_at = -1;
                    for (int64_t i = 0; i < no && bad_at < 0; i++) {
                        if (out_t == GD_INT64) {
                            bad_at = ((int64_t *)out)[i] == refi[i] ? -1 : i;
                            continue;
                        }
                        /* float32 results: one rounding to float32 (half an ulp, 2^-24 relative);
                         * float64 accumulation: an error far below the summation bound */
                        double g = get(out, out_t, i), r = refd[i];
                        double tol = (out_t == GD_FLOAT32 ? 6e-8 * fabs(r) : 0) + 1e-13 * mag[i];
                        int ok = isnan(r) || isnan(g) ? isnan(r) && isnan(g) : fabs(g - r) <= tol;
                        bad_at = ok ? -1 : i;
                    }
                    CHECK(bad_at < 0, "reduce op %d %s->%s (%lld,%lld,%lld): element %lld is %.17g, expected %.17g", op,
                          dtname(in_t), dtname(out_t), (long long)outer, (long long)len, (long long)inner,
                          (long long)bad_at, bad_at < 0 ? 0 : get(out, out_t, bad_at),
                          bad_at < 0 ? 0 : out_t == GD_INT64 ? (double)refi[bad_at] : refd[bad_at]);
                    xfree(out, (size_t)no * esz(out_t));
                    free(refd);
                    free(refi);
                    free(mag);
                    cases++;
                }
            }
            xfree(in, (size_t)n * esz(in_t));
        }
    }
    CHECK(cases > 200, "only %d reduction cases ran", cases);

    /* NaN propagates through max/min wherever it sits; int64 sums wrap */
    enum { L = 100000 };
    float *x = xalloc(L * sizeof(float));
    for (int64_t i = 0; i < L; i++) x[i] = (float)i;
    for (int64_t pos = 0; pos < L; pos += 33331) {
        x[pos] = NAN;
        float mx, mn;
        OK(B->reduce(&mx, GD_FLOAT32, GD_RED_MAX, x, GD_FLOAT32, 1, L, 1, 0, &g_err));
        OK(B->reduce(&mn, GD_FLOAT32, GD_RED_MIN, x, GD_FLOAT32, 1, L, 1, 0, &g_err));
        CHECK(isnan(mx) && isnan(mn), "NaN at %lld: max %g min %g", (long long)pos, mx, mn);
        x[pos] = (float)pos;
    }
    xfree(x, L * sizeof(float));
    int64_t big[3] = {INT64_MAX, 1, 1}, sum;
    OK(B->reduce(&sum, GD_INT64, GD_RED_SUM, big, GD_INT64, 1, 3, 1, 0, &g_err));
    CHECK(sum == INT64_MIN + 1, "INT64_MAX + 1 + 1 = %" PRId64, sum);
    double dsum;
    OK(B->reduce(&dsum, GD_FLOAT64, GD_RED_SUM, big, GD_INT64, 1, 3, 1, 0, &g_err));
    CHECK(dsum == 0x1p63, "float64 sum of int64 does not wrap: %g", dsum);

    /* float32 sum of 1e7 values of randn + 1 against a long double reference, and the
     * same bits with 1 thread and with all of them */
    enum { M = 10000000 };
    float *y = xalloc(M * sizeof(float));
    long double exact = 0;
    for (int64_t i = 0; i < M; i++) {
        y[i] = (float)(rnd_normal() + 1.0);
        exact += y[i];
    }
    double r1, r2;
    int nt = gd_cpu_get_num_threads();
    OK(B->reduce(&r1, GD_FLOAT64, GD_RED_SUM, y, GD_FLOAT32, 1, M, 1, 0, &g_err));
    gd_cpu_set_num_threads(1);
    OK(B->reduce(&r2, GD_FLOAT64, GD_RED_SUM, y, GD_FLOAT32, 1, M, 1, 0, &g_err));
    gd_cpu_set_num_threads(nt);
    CHECK(fabs(r1 - (double)exact) / (double)exact < 1e-12, "sum of 1e7 float32: rel. error %.3g",
          fabs(r1 - (double)exact) / (double)exact);
    CHECK(same_f64(r1, r2), "sum differs between %d threads and 1: %.17g vs %.17g", nt, r1, r2);
    xfree(y, M * sizeof(float));

    gd_error err = {0};
    CHECK(B->reduce(&r1, GD_FLOAT64, GD_RED_MAX, big, GD_FLOAT64, 1, 0, 1, 0, &err) == GD_ERR_VALUE,
          "max over an empty axis must be refused");
}

/* ------------------------------------------------------------------------------------------
 * gemm
 * ---------------------------------------------------------------------------------------- */

static void ref_gemm(double *c, gd_dtype t, const void *a, const void *b, int64_t batch, int64_t m, int64_t n,
                     int64_t k, int64_t sa, int64_t sb)
{
    for (int64_t p = 0; p < batch; p++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                long double s = 0;
                for (int64_t l = 0; l < k; l++) s += (long double)get(a, t, p * sa + i * k + l) * get(b, t, p * sb + l * n + j);
                c[(p * m + i) * n + j] = (double)s;
            }
}

static void test_gemm(void)
{
    const int64_t cases[][5] = {
        /* batch, m, n, k, broadcast (1: a has one matrix, 2: b has one) */
        {1, 1, 1, 1, 0},   {1, 7, 5, 3, 0},   {1, 33, 17, 65, 0}, {5, 4, 6, 3, 0},     {7, 9, 11, 13, 1},
        {6, 9, 11, 13, 2}, {300, 5, 7, 9, 0}, /* small products over threads */
        {8, 130, 120, 110, 0}, /* past OpenBLAS small-matrix kernels: one thread forced */
        {9, 70, 75, 80, 1},  {1, 257, 129, 300, 0}, {3, 5, 7, 0, 0}, /* k = 0 */
    };
    for (int dt = 0; dt < 2; dt++) {
        gd_dtype t = (gd_dtype)dt;
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            int64_t batch = cases[ci][0], m = cases[ci][1], n = cases[ci][2], k = cases[ci][3];
            int64_t sa = cases[ci][4] == 1 ? 0 : m * k, sb = cases[ci][4] == 2 ? 0 : k * n;
            int64_t na = (sa ? batch : 1) * m * k, nb = (sb ? batch : 1) * k * n, nc = batch * m * n;
            void *a = xalloc((size_t)na * esz(t)), *b = xalloc((size_t)nb * esz(t));
            void *c = xalloc((size_t)nc * esz(t));
            double *ref = malloc((size_t)nc * sizeof(double));
            fill_random(a, t, na, 1.0);
            fill_random(b, t, nb, 1.0);
            memset(c, 0xff, (size_t)nc * esz(t)); /* NaN garbage: beta = 0 must overwrite it */
            OK(B->gemm(c, t, a, b, batch, m, n, k, sa, sb, m * n, 0, &g_err));
            ref_gemm(ref, t, a, b, batch, m, n, k, sa, sb);
            double worst = 0;
            for (int64_t i = 0; i < nc; i++) {
                double e = fabs(get(c, t, i) - ref[i]) / (sqrt((double)k) + 1.0);
                if (!(e <= worst)) worst = e;
            }
            CHECK(worst <= (t == GD_FLOAT32 ? 1e-5 : 1e-13), "gemm %s case %zu (%lld,%lld,%lld,%lld): error %.3g",
                  dtname(t), ci, (long long)batch, (long long)m, (long long)n, (long long)k, worst);
            xfree(a, (size_t)na * esz(t));
            xfree(b, (size_t)nb * esz(t));
            xfree(c, (size_t)nc * esz(t));
            free(ref);
        }
    }
    CHECK(scipy_openblas_get_num_threads() == gd_cpu_get_num_threads(), "OpenBLAS left at %d threads, gpudev %d",
          scipy_openblas_get_num_threads(), gd_cpu_get_num_threads());
    float one = 1.0f, c1 = 5.0f;
    OK(B->gemm(&c1, GD_FLOAT32, &one, &one, 1, 0, 1, 1, 0, 0, 0, 0, &g_err));
    CHECK(c1 == 5.0f, "m = 0 must write nothing");
    gd_error err = {0};
    int rc = B->gemm(&c1, GD_FLOAT32, &one, &one, 1, (int64_t)INT_MAX + 1, 1, 1, 0, 0, 0, 0, &err);
    CHECK(rc == GD_ERR_VALUE && strstr(err.message, "2147483648"), "m > INT_MAX: rc %d %s", rc, err.message);
    rc = B->gemm(&c1, GD_INT64, &one, &one, 1, 1, 1, 1, 0, 0, 0, 0, &err);
    CHECK(rc == GD_ERR_VALUE && strstr(err.message, "int64"), "int64 gemm: rc %d %s", rc, err.message);
}

/* ------------------------------------------------------------------------------------------
 * permute, arange, random
 * ---------------------------------------------------------------------------------------- */

static void ref_permute(void *out, gd_dtype t, const void *in, int nd, const int64_t *shape, const int *perm)
{
    int64_t stride[8], oshape[8], n = 1;
    for (int k = nd - 1; k >= 0; k--) stride[k] = n, n *= shape[k];
    for (int k = 0; k < nd; k++) oshape[k] = shape[perm[k]];
    for (int64_t i = 0; i < n; i++) {
        int64_t rest = i, off = 0;
        for (int k = nd - 1; k >= 0; k--) {
            off += (rest % oshape[k]) * stride[perm[k]];
            rest /= oshape[k];
        }
        memcpy((char *)out + i * (int64_t)esz(t), (const char *)in + off * (int64_t)esz(t), esz(t));
    }
}

static void test_permute(void)
{
    struct {
        int nd;
        int64_t shape[4];
        int perm[4];
    } cases[] = {
        {2, {37, 53}, {1, 0}},       {2, {1, 9}, {1, 0}},          {2, {700, 450}, {1, 0}},
        {3, {5, 7, 9}, {0, 1, 2}},   {3, {5, 7, 9}, {0, 2, 1}},    {3, {5, 7, 9}, {1, 0, 2}},
        {3, {5, 7, 9}, {1, 2, 0}},   {3, {5, 7, 9}, {2, 0, 1}},    {3, {5, 7, 9}, {2, 1, 0}},
        {4, {3, 1, 4, 5}, {3, 2, 1, 0}}, {4, {2, 3, 4, 5}, {0, 2, 3, 1}}, {4, {6, 5, 4, 3}, {2, 3, 0, 1}},
        {3, {0, 4, 5}, {2, 1, 0}},
        {3, {4, 300, 201}, {0, 2, 1}}, /* batched 2-D transposes, threaded */
        {3, {300, 4, 201}, {1, 0, 2}}, /* row copies, threaded */
    };
    for (int dt = 0; dt < GD_NUM_DTYPES; dt++)
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            gd_dtype t = (gd_dtype)dt;
            int64_t n = prod(cases[ci].shape, cases[ci].nd);
            size_t bytes = (size_t)n * esz(t);
            void *in = xalloc(bytes), *out = xalloc(bytes), *ref = malloc(bytes + 1);
            fill_random(in, t, n, 100.0);
            OK(B->permute(out, t, in, cases[ci].nd, cases[ci].shape, cases[ci].perm, 0, &g_err));
            ref_permute(ref, t, in, cases[ci].nd, cases[ci].shape, cases[ci].perm);
            CHECK(n == 0 || memcmp(out, ref, bytes) == 0, "permute %s case %zu", dtname(t), ci);
            xfree(in, bytes);
            xfree(out, bytes);
            free(ref);
        }
}

static void test_arange(void)
{
    enum { N = 200001 };
    float *f = xalloc(N * 4);
    double *d = xalloc(N * 8);
    int64_t *q = xalloc(N * 8);
    gd_scalar start = {.f = -3.25}, step = {.f = 0.1};
    OK(B->arange(f, GD_FLOAT32, start, step, N, 0, &g_err));
    OK(B->arange(d, GD_FLOAT64, start, step, N, 0, &g_err));
    int bad = 0;
    for (int64_t i = 0; i < N; i++) bad += f[i] != (float)(-3.25 + (double)i * 0.1) || d[i] != -3.25 + (double)i * 0.1;
    CHECK(bad == 0, "float arange: %d wrong", bad);
    gd_scalar istart = {.i = INT64_MAX - 5}, istep = {.i = 3};
    OK(B->arange(q, GD_INT64, istart, istep, N, 0, &g_err));
    for (int64_t i = 0; i < N; i++) bad += q[i] != wrap_u((uint64_t)(INT64_MAX - 5) + 3 * (uint64_t)i);
    CHECK(bad == 0 && q[2] == INT64_MIN, "int64 arange wraps: q[2] = %" PRId64, q[2]);
    xfree(f, N * 4);
    xfree(d, N * 8);
    xfree(q, N * 8);
}

static void test_random(void)
{
    const int64_t sizes[] = {1, 3, 5, 7, 1000003};
    for (int dt = 0; dt < 2; dt++)
        for (int normal = 0; normal < 2; normal++)
            for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                gd_dtype t = (gd_dtype)dt;
                int64_t n = sizes[si], per = GD_PHILOX_PER_BLOCK(t == GD_FLOAT32);
                uint64_t seed = 0x1234567890abcdefull + si, offset = 1000 + si;
                void *out = xalloc((size_t)n * esz(t));
                OK(B->random(out, t, normal ? GD_RAND_NORMAL : GD_RAND_UNIFORM, seed, offset, n, 0, &g_err));
                int64_t bad = 0;
                double sum = 0, sumsq = 0, lo = 1e300, hi = -1e300;
                for (int64_t i = 0; i < n; i++) {
                    double expect;
                    if (t == GD_FLOAT32) {
                        float v[4];
                        gd_philox_block_f32(v, normal, offset + (uint64_t)(i / per), seed);
                        expect = v[i % per];
                    } else {
                        double v[2];
                        gd_philox_block_f64(v, normal, offset + (uint64_t)(i / per), seed);
                        expect = v[i % per];
                    }
                    double g = get(out, t, i);
                    bad += !same_f64(g, expect);
                    sum += g;
                    sumsq += g * g;
                    lo = g < lo ? g : lo;
                    hi = g > hi ? g : hi;
                }
                CHECK(bad == 0, "random %s normal=%d n=%lld: %lld elements differ from philox.h", dtname(t), normal,
                      (long long)n, (long long)bad);
                if (n > 1000) {
                    double mean = sum / (double)n, var = sumsq / (double)n - mean * mean;
                    if (normal)
                        CHECK(fabs(mean) < 0.01 && fabs(var - 1) < 0.01, "normal: mean %g var %g", mean, var);
                    else
                        CHECK(fabs(mean - 0.5) < 0.01 && fabs(var - 1.0 / 12) < 0.01 && lo >= 0 && hi < 1,
                              "uniform: mean %g var %g range [%g, %g]", mean, var, lo, hi);
                }
                xfree(out, (size_t)n * esz(t));
            }
}

/* ------------------------------------------------------------------------------------------
 * concurrency: several threads at once, and a forked child after parallel work
 * ---------------------------------------------------------------------------------------- */

typedef struct worker_arg {
    int id, failures;
} worker_arg;

static void *worker(void *p)
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
        if (B->reduce(&s, GD_FLOAT64, GD_RED_SUM, x, GD_FLOAT32, 1, N, 1, 0, &err) != GD_OK || s != expect)
            w->failures++;
        if (B->gemm(c, GD_FLOAT32, a, x, 1, M, M, M, 0, 0, 0, 0, &err) != GD_OK || memcmp(c, x, M * M * 4) != 0)
            w->failures++;
        /* a batch of 8 mid-size products: OpenBLAS held at one thread by every worker at once */
        if (B->gemm(c8, GD_FLOAT32, a, x, 8, M, M, M, 0, M * M, M * M, 0, &err) != GD_OK ||
            memcmp(c8, x, 8 * M * M * 4) != 0)
            w->failures++;
    }
    free(x);
    free(a);
    free(c);
    free(c8);
    return NULL;
}

static void test_concurrency(void)
{
    enum { T = 4 };
    pthread_t th[T];
    worker_arg args[T];
    for (int i = 0; i < T; i++) {
        args[i] = (worker_arg){i, 0};
        pthread_create(&th[i], NULL, worker, &args[i]);
    }
    int failures = 0;
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        failures += args[i].failures;
    }
    CHECK(failures == 0, "%d wrong results from %d concurrent threads", failures, T);
    CHECK(scipy_openblas_get_num_threads() == gd_cpu_get_num_threads(), "OpenBLAS left at %d threads, gpudev %d",
          scipy_openblas_get_num_threads(), gd_cpu_get_num_threads());

    /* After the parallel work above, a forked child must still compute (serially). */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20); /* a hang in the child becomes a failure, not a stuck test */
        enum { N = 1 << 20 };
        float *x = malloc(N * sizeof(float));
        for (int i = 0; i < N; i++) x[i] = 1.0f;
        double s = 0;
        gd_error err;
        int rc = B->reduce(&s, GD_FLOAT64, GD_RED_SUM, x, GD_FLOAT32, 1, N, 1, 0, &err);
        _exit(rc == GD_OK && s == N ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "forked child: status %d", status);
}

/* ------------------------------------------------------------------------------------------
 * benchmarks (--bench): the figures, measured in this process
 * ---------------------------------------------------------------------------------------- */

static double median(double *t, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double s = t[j];
            t[j] = t[j - 1];
            t[j - 1] = s;
        }
    return t[n / 2];
}

#define TIME_MEDIAN(result, reps, stmt)                                                          \
    do {                                                                                         \
        double ts_[64];                                                                          \
        for (int r_ = 0; r_ < (reps); r_++) {                                                    \
            double t0_ = now();                                                                  \
            stmt;                                                                                \
            ts_[r_] = now() - t0_;                                                               \
        }                                                                                        \
        (result) = median(ts_, (reps));                                                          \
    } while (0)

static void bench(int argc, char **argv)
{
    int nt = gd_cpu_get_num_threads();
    printf("threads %d, simd %s, %s\n", nt, gd_cpu_simd_level(), gd_cpu_blas_config());
    double t;

    /* tiny ops on 4x4 float32 through the vtable; the best of 15 runs, as a busy machine
     * only ever adds time to a loop this short */
    {
        float b4[16];
        for (int i = 0; i < 16; i++) b4[i] = 1e-30f;
        gd_ewise ew = {.ndim = 2, .contiguous = 1, .size = 16, .shape = {4, 4}};
        gd_operand ob = {.data = b4};
        enum { R = 200000 };
        double best = 1e9, best_sum = 1e9;
        float s;
        for (int rep = 0; rep < 15; rep++) {
            double t0 = now();
            for (int i = 0; i < R; i++) B->binary(b4, GD_ADD, GD_FLOAT32, &ew, &ob, &ob, 0, &g_err);
            double t1 = now();
            for (int i = 0; i < R; i++) B->reduce(&s, GD_FLOAT32, GD_RED_SUM, b4, GD_FLOAT32, 1, 16, 1, 0, &g_err);
            double t2 = now();
            best = t1 - t0 < best ? t1 - t0 : best;
            best_sum = t2 - t1 < best_sum ? t2 - t1 : best_sum;
        }
        printf("b += b (4x4 float32)          %8.1f ns per call\n", best / R * 1e9);
        printf("sum (4x4 float32)             %8.1f ns per call\n", best_sum / R * 1e9);
    }
    if (argc > 2 && strcmp(argv[2], "tiny") == 0) return; /* --bench tiny: only these */

    /* sum and sum of squares of 1e8 float32 */
    {
        enum { N = 100000000 };
        float *x = xalloc((size_t)N * 4);
        long double exact = 0;
        for (int64_t i = 0; i < N; i++) {
            x[i] = (float)(rnd_normal() + 1.0);
            exact += x[i];
        }
        float s32 = 0;
        for (int threads = nt; threads >= 1; threads = threads > 1 ? 1 : 0) {
            gd_cpu_set_num_threads(threads);
            TIME_MEDIAN(t, 9, B->reduce(&s32, GD_FLOAT32, GD_RED_SUM, x, GD_FLOAT32, 1, N, 1, 0, &g_err));
            printf("sum 1e8 float32, %d thread(s)  %8.1f GB/s   rel. error %.2g (float32 result)\n", threads,
                   4e8 / t / 1e9, fabs((double)s32 - (double)exact) / (double)exact);
            double ss;
            TIME_MEDIAN(t, 9, B->reduce(&ss, GD_FLOAT64, GD_RED_SUMSQ, x, GD_FLOAT32, 1, N, 1, 0, &g_err));
            printf("sumsq 1e8 float32, %d thread(s)%8.1f GB/s\n", threads, 4e8 / t / 1e9);
        }
        gd_cpu_set_num_threads(nt);
        float *y = xalloc((size_t)N * 4);
        gd_ewise ew = {.ndim = 1, .contiguous = 1, .size = N, .shape = {N}};
        gd_operand ox = {.data = x}, oy = {.data = y};
        TIME_MEDIAN(t, 5, B->binary(y, GD_ADD, GD_FLOAT32, &ew, &ox, &ox, 0, &g_err));
        printf("y = x + x, 1e8 float32        %8.1f GB/s (read + write)\n", 8e8 / t / 1e9);
        TIME_MEDIAN(t, 5, B->binary(y, GD_ADD, GD_FLOAT32, &ew, &oy, &ox, 0, &g_err));
        printf("y += x, 1e8 float32           %8.1f GB/s (read + write, 12 bytes per element)\n", 12e8 / t / 1e9);
        TIME_MEDIAN(t, 5, B->copy_device(y, 0, x, 0, (size_t)N * 4, &g_err));
        printf("copy 400 MB                   %8.1f GB/s (read + write)\n", 8e8 / t / 1e9);
        xfree(x, (size_t)N * 4);
        xfree(y, (size_t)N * 4);
    }

    /* transpose vs copy of a 4000x4000 float32 matrix */
    {
        enum { N = 4000 };
        float *a = xalloc((size_t)N * N * 4), *o = xalloc((size_t)N * N * 4);
        fill_random(a, GD_FLOAT32, (int64_t)N * N, 1.0);
        int64_t shape[2] = {N, N};
        int perm[2] = {1, 0};
        double tc;
        TIME_MEDIAN(t, 7, B->permute(o, GD_FLOAT32, a, 2, shape, perm, 0, &g_err));
        TIME_MEDIAN(tc, 7, B->copy_device(o, 0, a, 0, (size_t)N * N * 4, &g_err));
        printf(".T of 4000x4000 float32       %8.1f ms (copy %.1f ms, ratio %.1f)\n", t * 1e3, tc * 1e3, t / tc);
        xfree(a, (size_t)N * N * 4);
        xfree(o, (size_t)N * N * 4);
    }

    /* sgemm n = 1000, 2000, 4000 */
    for (int n = 1000; n <= 4000; n *= 2) {
        size_t bytes = (size_t)n * n * 4;
        float *a = xalloc(bytes), *b = xalloc(bytes), *c = xalloc(bytes);
        fill_random(a, GD_FLOAT32, (int64_t)n * n, 1.0);
        fill_random(b, GD_FLOAT32, (int64_t)n * n, 1.0);
        B->gemm(c, GD_FLOAT32, a, b, 1, n, n, n, 0, 0, 0, 0, &g_err);
        TIME_MEDIAN(t, n == 4000 ? 3 : 7, B->gemm(c, GD_FLOAT32, a, b, 1, n, n, n, 0, 0, 0, 0, &g_err));
        printf("sgemm n=%d                  %8.1f GFLOP/s\n", n, 2.0 * n * n * n / t / 1e9);
        xfree(a, bytes);
        xfree(b, bytes);
        xfree(c, bytes);
    }

    /* 1000 products of 100x100, and of 16x16 */
    for (int n = 100; n >= 16; n = n == 100 ? 16 : 0) {
        enum { P = 1000 };
        size_t bytes = (size_t)P * n * n * 4;
        float *a = xalloc(bytes), *b = xalloc(bytes), *c = xalloc(bytes);
        fill_random(a, GD_FLOAT32, (int64_t)P * n * n, 1.0);
        fill_random(b, GD_FLOAT32, (int64_t)P * n * n, 1.0);
        TIME_MEDIAN(t, 9, B->gemm(c, GD_FLOAT32, a, b, P, n, n, n, n * n, n * n, n * n, 0, &g_err));
        printf("1000 x (%dx%d) @ (%dx%d)      %8.2f ms\n", n, n, n, n, t * 1e3);
        xfree(a, bytes);
        xfree(b, bytes);
        xfree(c, bytes);
    }

    /* fresh memory: 400 MB allocated, written once, freed */
    {
        size_t bytes = (size_t)400 << 20;
        TIME_MEDIAN(t, 5, {
            void *p = xalloc(bytes);
            memset(p, 1, bytes);
            xfree(p, bytes);
        });
        printf("alloc + first write of 400 MiB %7.1f ms (%.3f ms per MB)\n", t * 1e3, t * 1e3 / 419.43);
    }
}

/* ------------------------------------------------------------------------------------------
 * main
 * ---------------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
        bench(argc, argv);
        return 0;
    }
    double t0 = now();
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"philox", test_philox},         {"device and memory", test_device_and_memory},
        {"copies", test_copies},         {"threads and facts", test_threads_and_facts},
        {"elementwise", test_elementwise}, {"astype", test_astype},
        {"reduce", test_reduce},         {"gemm", test_gemm},
        {"permute", test_permute},       {"arange", test_arange},
        {"random", test_random},         {"concurrency", test_concurrency},
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        int before = g_failures;
        double t = now();
        tests[i].fn();
        printf("%-18s %s (%.2f s)\n", tests[i].name, g_failures == before ? "ok" : "FAILED", now() - t);
    }
    printf("%d checks, %d failed (%.1f s)\n", g_checks, g_failures, now() - t0);
    return g_failures ? 1 : 0;
}
