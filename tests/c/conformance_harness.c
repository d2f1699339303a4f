/* conformance_harness.c - the machinery under every check of the backend conformance test:
 * counters and failure reports, device buffers through the backend's table, host data in any
 * dtype, reproducible random data, and tolerance-aware comparisons (see conformance.h).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "conformance.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h> /* QueryPerformanceCounter: no clock_gettime in Windows' C library */
#endif

const gd_backend *gdt_be;
int gdt_dev;
gd_error gdt_err;
long gdt_checks, gdt_failures, gdt_compared;
int gdt_quiet;

/* A flood of identical failures says no more than the first few. */
#define GDT_MAX_PRINTED 60

/* ------------------------------------------------------------------------------------------
 * failures
 * ---------------------------------------------------------------------------------------- */

void gdt_report_failure(const char *file, int line, const char *cond, const char *fmt, ...)
{
    gdt_failures++;
    if (gdt_quiet || gdt_failures > GDT_MAX_PRINTED) return;
    fflush(stdout);
    fprintf(stderr, "%s:%d: check failed: %s: ", file, line, cond);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (gdt_failures == GDT_MAX_PRINTED) fprintf(stderr, "(further failures are counted, not printed)\n");
}

int gdt_ok(int rc, const char *call, const char *file, int line)
{
    gdt_checks++;
    if (rc == GD_OK) return 1;
    gdt_report_failure(file, line, "returns GD_OK", "%s returned %d: %s", call, rc, gdt_err.message);
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * device buffers
 * ---------------------------------------------------------------------------------------- */

void *gdt_alloc(size_t nbytes)
{
    void *p = NULL;
    gd_error err = {0};
    int rc = gdt_be->alloc(&p, gdt_dev, nbytes, &err);
    if (rc != GD_OK || !p) {
        fflush(stdout);
        fprintf(stderr, "conformance: alloc of %zu bytes on device %d failed (status %d): %s; cannot go on\n",
                nbytes, gdt_dev, rc, err.message);
        exit(2);
    }
    return p;
}

void gdt_free(void *ptr, size_t nbytes) { gdt_be->free(ptr, gdt_dev, nbytes); }

/* The copies that carry test data are plumbing, not checks of their own (the copies
 * section checks those entries): a failure is reported and counted, a success is not. */
static void plumbing(int rc, const char *what, size_t nbytes)
{
    if (rc != GD_OK)
        gdt_report_failure(__FILE__, __LINE__, "returns GD_OK", "%s of %zu bytes returned %d: %s", what, nbytes, rc,
                           gdt_err.message);
}

void gdt_upload(void *dev, const void *host, size_t nbytes)
{
    plumbing(gdt_be->copy_from_host(dev, gdt_dev, host, nbytes, &gdt_err), "copy_from_host", nbytes);
}

void gdt_download(void *host, const void *dev, size_t nbytes)
{
    plumbing(gdt_be->copy_to_host(host, dev, gdt_dev, nbytes, &gdt_err), "copy_to_host", nbytes);
}

void *gdt_upload_new(const void *host, size_t nbytes)
{
    void *p = gdt_alloc(nbytes);
    gdt_upload(p, host, nbytes);
    return p;
}

void gdt_sync(void)
{
    if (gdt_be->synchronize) plumbing(gdt_be->synchronize(gdt_dev, &gdt_err), "synchronize", 0);
}

/* ------------------------------------------------------------------------------------------
 * host data
 * ---------------------------------------------------------------------------------------- */

const char *gdt_dtype_name(gd_dtype t)
{
    return (unsigned)t < GD_NUM_DTYPES ? gd_dtype_name(t) : "?";
}

void *gdt_host_bytes(size_t nbytes)
{
    void *p = malloc(nbytes ? nbytes : 1);
    if (!p) {
        fprintf(stderr, "conformance: out of host memory for %zu bytes of test data\n", nbytes);
        exit(2);
    }
    return p;
}

void *gdt_host(int64_t n, gd_dtype t) { return gdt_host_bytes((size_t)(n > 0 ? n : 0) * gd_dtype_size(t)); }

double gdt_getf(const void *p, gd_dtype t, int64_t i)
{
    if (t == GD_FLOAT32) return ((const float *)p)[i];
    if (t == GD_FLOAT64) return ((const double *)p)[i];
    return (double)gdt_geti(p, t, i);
}

int64_t gdt_geti(const void *p, gd_dtype t, int64_t i)
{
    if (t == GD_BOOL) return ((const uint8_t *)p)[i];
    if (t == GD_INT32) return ((const int32_t *)p)[i];
    return ((const int64_t *)p)[i];
}

void gdt_put(void *p, gd_dtype t, int64_t i, double f, int64_t v)
{
    if (t == GD_FLOAT32)
        ((float *)p)[i] = (float)f;
    else if (t == GD_FLOAT64)
        ((double *)p)[i] = f;
    else if (t == GD_BOOL)
        ((uint8_t *)p)[i] = v != 0;
    else if (t == GD_INT32)
        ((int32_t *)p)[i] = (int32_t)gdt_wrap(t, v);
    else
        ((int64_t *)p)[i] = v;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

uint64_t gdt_rand_u64(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static double rand_unit(void) { return (double)(gdt_rand_u64() >> 11) * 0x1p-53; }

/* Drawn from a pool of 65536 normals made once: test data needs many values, not a perfect
 * distribution, and log + cos per value dominated the larger cases. */
double gdt_rand_normal(void)
{
    static double pool[1 << 16];
    static int ready;
    if (!ready) {
        for (int i = 0; i < 1 << 16; i++) {
            double u1 = rand_unit(), u2 = rand_unit();
            pool[i] = sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
        }
        ready = 1;
    }
    return pool[gdt_rand_u64() >> 48];
}

void gdt_fill_edge(void *p, gd_dtype t, int64_t n)
{
    static const double fedge[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, INFINITY, -INFINITY, NAN, 1e-30, 3.5, -7.25};
    static const int64_t iedge[] = {0, 1, -1, 2, -2, INT64_MAX, INT64_MIN, 3, 1000003, -77,
                                    ((int64_t)1 << 54) + ((int64_t)1 << 30) + 1, /* int64 -> float32 */
                                    ((int64_t)1 << 53) + 1, -((int64_t)1 << 24) - 1};
    static const int64_t i32edge[] = {0, 1, -1, 2, -2, INT32_MAX, INT32_MIN, 3, 1000003, -77,
                                      ((int64_t)1 << 24) + 1, /* int32 -> float32 */
                                      46341, -65536};             /* squares past int32 */
    const int64_t nf = sizeof fedge / sizeof fedge[0], ni = sizeof iedge / sizeof iedge[0];
    const int64_t ni32 = sizeof i32edge / sizeof i32edge[0];
    for (int64_t i = 0; i < n; i++) {
        if (t == GD_BOOL)
            gdt_put(p, t, i, 0, i < 2 ? i : (int64_t)(gdt_rand_u64() >> 63));
        else if (t == GD_INT64)
            gdt_put(p, t, i, 0, i < ni ? iedge[i] : (int64_t)(gdt_rand_u64() % 2001) - 1000);
        else if (t == GD_INT32)
            gdt_put(p, t, i, 0, i < ni32 ? i32edge[i] : (int64_t)(gdt_rand_u64() % 2001) - 1000);
        else
            gdt_put(p, t, i, i < nf ? fedge[i] : gdt_rand_normal() * 4, 0);
    }
}

void gdt_fill_normal(void *p, gd_dtype t, int64_t n, double scale)
{
    for (int64_t i = 0; i < n; i++) {
        double v = gdt_rand_normal() * scale;
        gdt_put(p, t, i, v, (int64_t)llround(v));
    }
}

void *gdt_ref_new(int64_t n, gd_dtype t) { return gdt_host(n, gdt_is_int(t) ? GD_INT64 : GD_FLOAT64); }

/* ------------------------------------------------------------------------------------------
 * comparisons
 * ---------------------------------------------------------------------------------------- */

/* the spacing of dtype t's numbers at x (subnormal spacing near 0) */
static double ulp(double x, gd_dtype t)
{
    int e;
    frexp(fabs(x), &e); /* |x| = m * 2^e, m in [0.5, 1); 0 gives e = 0 */
    if (t == GD_FLOAT32) return ldexp(1.0, e - 24 > -149 ? e - 24 : -149);
    return ldexp(1.0, e - 53 > -1074 ? e - 53 : -1074);
}

int gdt_close(double got, double want, gd_dtype t, gdt_tol tol, int64_t i)
{
    double w = t == GD_FLOAT32 ? (double)(float)want : want;
    if (got == w) return 1; /* also +0 and -0, and equal infinities */
    if (isnan(w) || isnan(got)) return isnan(w) && isnan(got);
    if (isinf(w) || isinf(got)) return 0;
    double slack = tol.ulps * ulp(want, t) + tol.abs + (tol.abs_each ? tol.abs_each[i] : 0.0);
    return fabs(got - want) <= slack;
}

static int64_t first_mismatch(const void *got, gd_dtype t, int64_t n, const void *want, gdt_tol tol)
{
    for (int64_t i = 0; i < n; i++) {
        if (gdt_is_int(t)) {
            if (gdt_geti(got, t, i) != ((const int64_t *)want)[i]) return i;
        } else if (!gdt_close(gdt_getf(got, t, i), ((const double *)want)[i], t, tol, i)) {
            return i;
        }
    }
    return -1;
}

int gdt_expect_at(const char *file, int line, int on_host, const void *got, gd_dtype t, int64_t n, const void *want,
                  gdt_tol tol, const char *what, ...)
{
    void *host = NULL;
    if (!on_host) {
        host = gdt_host(n, t);
        if (n > 0) gdt_download(host, got, (size_t)n * gd_dtype_size(t));
        got = host;
    }
    int64_t bad = first_mismatch(got, t, n, want, tol);
    gdt_checks++, gdt_compared++;
    if (bad >= 0) {
        char desc[256];
        va_list ap;
        va_start(ap, what);
        vsnprintf(desc, sizeof desc, what, ap);
        va_end(ap);
        if (gdt_is_int(t))
            gdt_report_failure(file, line, "matches the reference", "%s: element %lld of %lld is %lld, expected %lld",
                               desc, (long long)bad, (long long)n, (long long)gdt_geti(got, t, bad),
                               (long long)((const int64_t *)want)[bad]);
        else
            gdt_report_failure(file, line, "matches the reference", "%s: element %lld of %lld is %.17g, expected %.17g",
                               desc, (long long)bad, (long long)n, gdt_getf(got, t, bad), ((const double *)want)[bad]);
    }
    free(host);
    return bad < 0;
}

double gdt_now(void)
{
#ifdef _WIN32
    LARGE_INTEGER freq, t;
    QueryPerformanceFrequency(&freq);
    QueryPerformanceCounter(&t);
    return (double)t.QuadPart / (double)freq.QuadPart;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#endif
}
