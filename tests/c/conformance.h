/* conformance.h - what every part of the backend conformance test shares: the backend under
 * test, the check counters and macros, device buffers moved only through the backend's table,
 * host data in any dtype, comparisons with per-dtype tolerances, and the sections.
 *
 * The test is one program per backend: the same sources (tests/c/conformance*.c) linked with
 * one target file that names the backend's table (target_cpu.c, target_cuda.c). Every check
 * reaches the backend through its gd_backend table and moves data with alloc, copy_from_host
 * and copy_to_host, so it runs unchanged against a GPU; expected values come from plain host
 * loops. Plain C11.
 */
#ifndef GPUDEV_CONFORMANCE_H
#define GPUDEV_CONFORMANCE_H

#include <stddef.h>
#include <stdint.h>

#include "gpudev.h"

/* ------------------------------------------------------------------------------------------
 * the backend under test and the target that supplies it
 * ---------------------------------------------------------------------------------------- */

extern const gd_backend *gdt_be; /* every check calls this table... */
extern int gdt_dev;              /* ...on this device index */
extern gd_error gdt_err;         /* what calls under OK() report into */

typedef struct gdt_section {
    const char *name;
    void (*run)(void);
} gdt_section;

/* Defined by the one target file linked into the program. */
typedef struct gdt_target {
    const gd_backend *(*backend)(void);
    int emulated;                  /* a CPU emulation of the device: --bench refuses */
    const gdt_section *sections;   /* checks only this backend has (may be NULL) */
    int num_sections;
    void (*bench)(void);           /* timings only this backend has (may be NULL) */
} gdt_target;
extern const gdt_target gdt_target_under_test;

/* The sections every backend runs, in conformance_*.c. */
void gdt_check_fresh_device(void);
void gdt_check_table(void);
void gdt_check_memory(void);
void gdt_check_copies(void);
void gdt_check_elementwise(void);
void gdt_check_elementwise_sample(void); /* every operation and dtype on two of its layouts */
void gdt_check_elementwise_values(void);
void gdt_check_astype(void);
void gdt_check_reduce(void);
void gdt_check_gemm(void);
void gdt_check_permute(void);
void gdt_check_arange(void);
void gdt_check_random(void);
void gdt_check_philox(void);
void gdt_check_refusals(void);
void gdt_check_services(void);
void gdt_check_gather(void); /* indexing that copies */
void gdt_check_select(void); /* where, argreduce */
void gdt_check_axpby(void);  /* fused updates */
void gdt_check_window(void); /* im2col, col2im, pooling */
int gdt_self_test(void);  /* --self-test: the checks themselves can fail; returns failures */
void gdt_bench(int tiny); /* --bench; tiny: only the small-operation timings */
/* one line of the --bench report: a printf-style label, the value and its unit */
void gdt_bench_row(double value, const char *unit, const char *fmt, ...) GD_PRINTF(3, 4);

/* ------------------------------------------------------------------------------------------
 * checks: each CHECK counts once; a failure prints file:line, the condition and the values
 * ---------------------------------------------------------------------------------------- */

extern long gdt_checks, gdt_failures;
extern long gdt_compared; /* of the checks, results compared with a reference (EXPECT) */
extern int gdt_quiet; /* self-test: failures are expected, count them without printing */

void gdt_report_failure(const char *file, int line, const char *cond, const char *fmt, ...) GD_PRINTF(4, 5);

#define CHECK(cond, ...)                                                                         \
    do {                                                                                         \
        gdt_checks++;                                                                            \
        if (!(cond)) gdt_report_failure(__FILE__, __LINE__, #cond, __VA_ARGS__);                 \
    } while (0)

/* A table call that must succeed. Evaluates to whether it did. */
#define OK(call) gdt_ok((call), #call, __FILE__, __LINE__)
int gdt_ok(int rc, const char *call, const char *file, int line);

/* ------------------------------------------------------------------------------------------
 * device buffers, through the table only
 * ---------------------------------------------------------------------------------------- */

/* alloc on the device under test; a failure here ends the program (exit status 2): nothing
 * after it could be checked. The copies and synchronize here carry test data: a failure is
 * reported and counted as failed, a success is not counted as a check. */
void *gdt_alloc(size_t nbytes);
void gdt_free(void *ptr, size_t nbytes);
void gdt_upload(void *dev, const void *host, size_t nbytes);
void gdt_download(void *host, const void *dev, size_t nbytes);
void *gdt_upload_new(const void *host, size_t nbytes); /* alloc + upload */
void gdt_sync(void);                                     /* synchronize, where there is one */

/* ------------------------------------------------------------------------------------------
 * host data in any dtype
 * ---------------------------------------------------------------------------------------- */

const char *gdt_dtype_name(gd_dtype t);
void *gdt_host(int64_t n, gd_dtype t);     /* malloc of n elements (at least 1 byte) */
void *gdt_host_bytes(size_t nbytes);      /* malloc, or the end of the program */
double gdt_getf(const void *p, gd_dtype t, int64_t i);
void gdt_put(void *p, gd_dtype t, int64_t i, double f, int64_t v); /* f for floats, v for integers and bool */
/* Integer dtypes (int64, int32) are checked exactly, against int64 references. */
static inline int gdt_is_int(gd_dtype t) { return gd_dtype_is_int(t); }
int64_t gdt_geti(const void *p, gd_dtype t, int64_t i); /* an int64, int32 or bool element */
/* v as integer dtype t holds it: int32 keeps the low 32 bits (wraps), as the backends do. */
static inline int64_t gdt_wrap(gd_dtype t, int64_t v)
{
    return t == GD_INT32 ? (int64_t)(int32_t)(uint32_t)(uint64_t)v : v;
}

uint64_t gdt_rand_u64(void);   /* xorshift: the same data every run */
double gdt_rand_normal(void);

/* Edge values first (NaN, +-inf, +-0, tiny; INT64_MIN/MAX, INT32_MIN/MAX and friends), then
 * random ones: floats normal * 4, integers uniform in [-1000, 1000], bools 0, 1, then random. */
void gdt_fill_edge(void *p, gd_dtype t, int64_t n);
/* normal * scale (integers: rounded) */
void gdt_fill_normal(void *p, gd_dtype t, int64_t n, double scale);

/* ------------------------------------------------------------------------------------------
 * comparisons
 *
 * A reference is float64 (double[]) for float results and exact (int64_t[]) for integer ones.
 * Float results match when both are NaN, when both are the same infinity, or within
 *   ulps * ulp(want) + abs + abs_each[i]      (ulp in the result's dtype)
 * and with ulps = abs = 0 and no abs_each they must equal the reference rounded to the
 * result's dtype (+0 equals -0). Integer results match exactly.
 * ---------------------------------------------------------------------------------------- */

typedef struct gdt_tol {
    double ulps;
    double abs;
    const double *abs_each; /* per element, may be NULL */
} gdt_tol;

#define GDT_EXACT ((gdt_tol){0, 0, NULL})

int gdt_close(double got, double want, gd_dtype t, gdt_tol tol, int64_t i);

/* Download n elements of dtype t from the device buffer `dev` and compare them with `want`
 * (double[] or int64_t[] as above): one check, whose message names the first mismatch and
 * the case (printf-style). Evaluates to whether all matched. */
#define EXPECT(dev, t, n, want, tol, ...)                                                        \
    gdt_expect_at(__FILE__, __LINE__, 0, (dev), (t), (n), (want), (tol), __VA_ARGS__)
/* The same for a host buffer holding the result. */
#define EXPECT_HOST(got, t, n, want, tol, ...)                                                   \
    gdt_expect_at(__FILE__, __LINE__, 1, (got), (t), (n), (want), (tol), __VA_ARGS__)
int gdt_expect_at(const char *file, int line, int on_host, const void *got, gd_dtype t, int64_t n, const void *want,
                  gdt_tol tol, const char *what, ...) GD_PRINTF(9, 10);

/* reference buffer for n results of dtype t: double[], or int64_t[] for integer dtypes */
void *gdt_ref_new(int64_t n, gd_dtype t);

double gdt_now(void); /* seconds, monotonic */

#endif /* GPUDEV_CONFORMANCE_H */
