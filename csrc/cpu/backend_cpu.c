/* backend_cpu.c - the CPU backend: host memory, copies, elementwise kernels, reductions,
 * OpenBLAS matrix products, transposes, arange and the Philox generator.
 *
 * Every entry computes and returns; ops.c has already checked shapes, dtypes and devices.
 * Small inputs run straight through a contiguous loop on the calling thread (a 4x4 add
 * must cost a few nanoseconds here); large ones are split over OpenMP threads. Results do
 * not depend on the thread count: reductions combine fixed blocks in a fixed order.
 * Nothing here touches Python, so every entry may run without the GIL, from many threads.
 */
#define _GNU_SOURCE /* sched_getaffinity, MADV_HUGEPAGE under -std=c11 */

#include "backend_cpu.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cblas.h> /* scipy-openblas32: scipy_cblas_* with 32-bit int dimensions */

#ifdef _OPENMP
#include <omp.h>
#endif

#include "philox.h"

/* ------------------------------------------------------------------------------------------
 * tuning constants and portability macros
 * ---------------------------------------------------------------------------------------- */

#define GD_ALIGN ((size_t)64)                /* cache line: every allocation starts on one */
#define GD_HUGE_MIN ((size_t)4 << 20)        /* from here allocations ask for huge pages */
#define GD_HUGE_ALIGN ((size_t)2 << 20)      /* x86-64 / arm64 transparent huge page size */

/* Work below these element counts stays on the calling thread. A parallel region costs
 * about a microsecond on an idle machine; two threads measured 1.4x faster than one for an
 * add of 2^16 float32 and 0.8x for 2^14. Past the thresholds, a loop can also wait for a
 * thread that shares its core with another busy process. */
#define GD_PAR_CHEAP ((int64_t)1 << 16)      /* memory-bound loops: add, copy, casts */
#define GD_PAR_COSTLY ((int64_t)1 << 13)     /* libm calls, pow, random numbers */
#define GD_PAR_REDUCE ((int64_t)1 << 16)
#define GD_PAR_COPY_BYTES ((int64_t)8 << 20)
#define GD_MAX_LOOP_THREADS 64               /* memory bandwidth is saturated well before */
#define GD_STEAL_PIECES 8                    /* pieces per thread's part in parallel loops */

#define GD_LANES 16                          /* independent accumulators in reductions */
#define GD_RED_BLOCK ((int64_t)1 << 14)      /* smallest block of a long row reduction */
#define GD_RED_MAX_BLOCKS 1024               /* blocks per row at most (partials on stack) */
#define GD_RED_TILE 1024                     /* column reductions: accumulators per tile */
#define GD_RED_RCHUNK ((int64_t)1 << 12)     /* column reductions: rows per split chunk */
#define GD_RED_MAX_CHUNKS 64
#define GD_RED_SPLIT_MAX ((int64_t)4096)     /* split rows only when outer * inner <= this */

#define GD_GEMM_ONE_THREAD_MNK 262144.0      /* OpenBLAS runs m*n*k <= 64^3 on one thread */
#define GD_GEMM_BATCH_MAX_MNK 16777216.0     /* batches of products up to 256^3: a core each */
#define GD_GEMM_PAR_MNK ((int64_t)1 << 18)   /* multiply-adds worth a second thread */
#define GD_TILE 32                           /* transpose tile edge */

/* One build runs everywhere: hot loops get AVX-512 and AVX2 clones picked at load time. */
#if defined(__x86_64__) && defined(__GNUC__)
#define GD_SIMD __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GD_SIMD
#endif

#ifdef __GNUC__
#define GD_NOINLINE __attribute__((noinline))
#else
#define GD_NOINLINE
#endif

#ifdef _OPENMP
#define GD_PRAGMA(x) _Pragma(#x)
#else
#define GD_PRAGMA(x)
#endif

#define GD_MIN(a, b) ((a) < (b) ? (a) : (b))
#define GD_MAX(a, b) ((a) > (b) ? (a) : (b))

/* An accumulator or scalar of any dtype in one 8-byte word. */
typedef union gd_word {
    double d;
    int64_t i;
    uint64_t u;
    float f;
} gd_word;

static const char *const gd_dtype_names[GD_NUM_DTYPES] = {"float32", "float64", "int64"};
static const char *const gd_binop_names[GD_NUM_BINOPS] = {"add", "subtract", "multiply", "divide",
                                                          "power", "maximum", "minimum"};
static const char *const gd_unop_names[GD_NUM_UNOPS] = {"copy", "negative", "abs", "relu", "exp",
                                                        "log", "sqrt", "tanh", "square"};
static const char *const gd_redop_names[GD_NUM_REDOPS] = {"sum", "max", "min", "sum of squares"};

/* ------------------------------------------------------------------------------------------
 * errors
 * ---------------------------------------------------------------------------------------- */

static int gd_bad_dtype(gd_error *err, const char *op, int dtype)
{
    if ((unsigned)dtype < GD_NUM_DTYPES)
        return gd_set_error(err, GD_ERR_VALUE, "%s: dtype %s is not supported by the CPU backend here",
                       op, gd_dtype_names[dtype]);
    return gd_set_error(err, GD_ERR_VALUE, "%s: unknown dtype code %d (expected 0..%d)", op, dtype,
                   GD_NUM_DTYPES - 1);
}

/* ------------------------------------------------------------------------------------------
 * threads
 *
 * One process-wide count drives gpudev's OpenMP loops and OpenBLAS. It is passed to each
 * parallel region through num_threads() rather than omp_set_num_threads(), which would
 * only affect the calling thread. GNU OpenMP's pool does not survive fork(): a child that
 * entered a parallel region would hang, so after a fork the child runs everything serially.
 * ---------------------------------------------------------------------------------------- */

static atomic_int gd_threads; /* 0 until first asked */

#ifdef _OPENMP
static atomic_int gd_in_fork_child;
static pthread_once_t gd_fork_once = PTHREAD_ONCE_INIT;
static void gd_mark_fork_child(void) { atomic_store_explicit(&gd_in_fork_child, 1, memory_order_relaxed); }
static void gd_register_fork_handler(void) { pthread_atfork(NULL, NULL, gd_mark_fork_child); }
#endif

static int gd_default_threads(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)GD_MIN(n, (long)INT_MAX) : 1;
}

int gd_cpu_get_num_threads(void)
{
    int n = atomic_load_explicit(&gd_threads, memory_order_relaxed);
    if (n == 0) {
        /* Racing first callers compute the same value, so a plain store is enough. */
        n = gd_default_threads();
        atomic_store_explicit(&gd_threads, n, memory_order_relaxed);
    }
    return n;
}

/* guarded by gd_blas_lock: */
static pthread_mutex_t gd_blas_lock = PTHREAD_MUTEX_INITIALIZER;
static int gd_blas_single_users;  /* batches now holding OpenBLAS at one thread */
static int gd_blas_saved_threads; /* its thread count to restore when the last one ends */

/* OpenBLAS single-threaded while a batch of products runs on gpudev's threads (see the
 * matrix products section); nested and concurrent sections share one count. */
static void gd_blas_single_begin(void)
{
    pthread_mutex_lock(&gd_blas_lock);
    if (gd_blas_single_users++ == 0) {
        gd_blas_saved_threads = scipy_openblas_get_num_threads();
        scipy_openblas_set_num_threads(1);
    }
    pthread_mutex_unlock(&gd_blas_lock);
}

static void gd_blas_single_end(void)
{
    pthread_mutex_lock(&gd_blas_lock);
    if (--gd_blas_single_users == 0) scipy_openblas_set_num_threads(gd_blas_saved_threads);
    pthread_mutex_unlock(&gd_blas_lock);
}

void gd_cpu_set_num_threads(int n)
{
    if (n < 1) n = 1;
    pthread_mutex_lock(&gd_blas_lock);
    atomic_store_explicit(&gd_threads, n, memory_order_relaxed);
    if (gd_blas_single_users == 0)
        scipy_openblas_set_num_threads(n);
    else
        gd_blas_saved_threads = n; /* a batch holds OpenBLAS at 1 thread: applied when it ends */
    pthread_mutex_unlock(&gd_blas_lock);
}

/* Threads worth using for `work` items when a thread should get at least min_work / 2. */
static int gd_threads_for(int64_t work, int64_t min_work)
{
#ifdef _OPENMP
    if (work < min_work) return 1;
    int nt = gd_cpu_get_num_threads();
    if (nt <= 1 || atomic_load_explicit(&gd_in_fork_child, memory_order_relaxed)) return 1;
    int64_t useful = GD_MIN(work / (min_work / 2), (int64_t)GD_MAX_LOOP_THREADS);
    if (useful < nt) nt = (int)useful;
    pthread_once(&gd_fork_once, gd_register_fork_handler); /* before the first region */
    return nt;
#else
    (void)work;
    (void)min_work;
    return 1;
#endif
}

typedef void (*gd_range_fn)(void *ctx, int64_t begin, int64_t end);

/* fn(ctx, begin, end) over [0, n) on nt threads. Each thread owns one contiguous part of
 * the range (edges on multiples of `align` items) and works through it in pieces; a thread
 * that finishes early takes the remaining pieces of the others. On an idle machine every
 * thread thus handles the same part of an array on every call, so data that fits in the
 * caches stays in the same core's cache from one operation to the next (handing chunks out
 * first come, first served measured up to 2x slower on repeated in-cache operations); on a
 * busy one, a core shared with another process does not hold up the whole loop. */
static void gd_parallel_for(int nt, int64_t n, int64_t align, gd_range_fn fn, void *ctx)
{
    if (nt <= 1 || n <= align) {
        fn(ctx, 0, n);
        return;
    }
#ifdef _OPENMP
    int64_t part = (n + nt - 1) / nt;
    part = (part + align - 1) / align * align;
    int64_t piece = (part + GD_STEAL_PIECES - 1) / GD_STEAL_PIECES;
    piece = (piece + align - 1) / align * align;
    struct {
        _Alignas(64) atomic_llong next; /* next piece of this part; one cache line each */
    } cursor[GD_MAX_LOOP_THREADS];
    for (int t = 0; t < nt; t++) atomic_init(&cursor[t].next, 0);
    GD_PRAGMA(omp parallel num_threads(nt))
    {
        const int me = omp_get_thread_num(); /* the runtime may grant fewer than nt threads */
        for (int k = 0; k < nt; k++) {
            const int owner = (me + k) % nt;
            const int64_t begin = (int64_t)owner * part, end = GD_MIN(n, begin + part);
            for (;;) {
                int64_t b = begin + piece * atomic_fetch_add_explicit(&cursor[owner].next, 1, memory_order_relaxed);
                if (b >= end) break;
                fn(ctx, b, GD_MIN(end, b + piece));
            }
        }
    }
#else
    fn(ctx, 0, n);
#endif
}

/* The same for independent items whose data is new each call (whole matrix products):
 * handed out `grain` at a time to whichever thread is free. */
static void gd_parallel_for_dynamic(int nt, int64_t n, int64_t grain, gd_range_fn fn, void *ctx)
{
    if (nt <= 1 || n <= grain) {
        fn(ctx, 0, n);
        return;
    }
#ifdef _OPENMP
    const int64_t chunks = (n + grain - 1) / grain;
    GD_PRAGMA(omp parallel for num_threads(nt) schedule(dynamic, 1))
    for (int64_t c = 0; c < chunks; c++) fn(ctx, c * grain, GD_MIN(n, (c + 1) * grain));
#else
    fn(ctx, 0, n);
#endif
}

/* ------------------------------------------------------------------------------------------
 * machine description
 * ---------------------------------------------------------------------------------------- */

const char *gd_cpu_simd_level(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return "avx512f";
    if (__builtin_cpu_supports("avx2")) return "avx2";
    return "baseline";
#elif defined(__aarch64__)
    return "neon";
#else
    return "baseline";
#endif
}

const char *gd_cpu_blas_config(void)
{
    const char *config = scipy_openblas_get_config();
    return config ? config : "OpenBLAS (configuration unknown)";
}

/* ------------------------------------------------------------------------------------------
 * memory
 *
 * No cache: freed blocks go back to the C library, which keeps and reuses them. Blocks of
 * 4 MiB and more are aligned to 2 MiB and marked for transparent huge pages: they fault in
 * about 4x faster than 4 KiB pages when first touched, and streaming over them misses the
 * TLB far less (it matters most in virtual machines, where a miss walks two page tables).
 * ---------------------------------------------------------------------------------------- */

static atomic_llong gd_mem_allocated, gd_mem_peak, gd_mem_count, gd_mem_reserved;

/* What alloc(0) returns: a valid, aligned address that is never written. */
static _Alignas(64) unsigned char gd_empty_block[64];

static void gd_mem_count_alloc(size_t nbytes, size_t reserved)
{
    long long now = atomic_fetch_add_explicit(&gd_mem_allocated, (long long)nbytes, memory_order_relaxed) +
                    (long long)nbytes;
    atomic_fetch_add_explicit(&gd_mem_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&gd_mem_reserved, (long long)reserved, memory_order_relaxed);
    long long peak = atomic_load_explicit(&gd_mem_peak, memory_order_relaxed);
    while (now > peak &&
           !atomic_compare_exchange_weak_explicit(&gd_mem_peak, &peak, now, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
}

static size_t gd_alloc_alignment(size_t nbytes) { return nbytes >= GD_HUGE_MIN ? GD_HUGE_ALIGN : GD_ALIGN; }

static int cpu_alloc(void **out, int device, size_t nbytes, gd_error *err)
{
    (void)device;
    *out = NULL;
    if (nbytes == 0) {
        *out = gd_empty_block;
        return GD_OK;
    }
    size_t align = gd_alloc_alignment(nbytes);
    size_t reserved = (nbytes + align - 1) & ~(align - 1);
    void *p = NULL;
    if (reserved < nbytes || posix_memalign(&p, align, reserved) != 0) {
        char want[32], held[32];
        return gd_set_error(err, GD_ERR_HOST_OOM,
                       "out of host memory allocating %s (%zu bytes); gpudev holds %s of host "
                       "memory in %lld arrays; free some arrays or use a smaller shape",
                       gd_format_bytes(want, sizeof want, nbytes), nbytes,
                       gd_format_bytes(held, sizeof held,
                                       (size_t)atomic_load_explicit(&gd_mem_allocated, memory_order_relaxed)),
                       (long long)atomic_load_explicit(&gd_mem_count, memory_order_relaxed));
    }
#ifdef MADV_HUGEPAGE
    if (align == GD_HUGE_ALIGN) (void)madvise(p, reserved, MADV_HUGEPAGE); /* a hint: may fail */
#endif
    gd_mem_count_alloc(nbytes, reserved);
    *out = p;
    return GD_OK;
}

static void cpu_free(void *ptr, int device, size_t nbytes)
{
    (void)device;
    if (ptr == NULL || ptr == (void *)gd_empty_block) return;
    size_t align = gd_alloc_alignment(nbytes);
    size_t reserved = (nbytes + align - 1) & ~(align - 1);
    atomic_fetch_sub_explicit(&gd_mem_allocated, (long long)nbytes, memory_order_relaxed);
    atomic_fetch_sub_explicit(&gd_mem_reserved, (long long)reserved, memory_order_relaxed);
    atomic_fetch_sub_explicit(&gd_mem_count, 1, memory_order_relaxed);
    free(ptr);
}

void gd_cpu_memory_stats(int64_t out[4])
{
    out[0] = atomic_load_explicit(&gd_mem_allocated, memory_order_relaxed);
    out[1] = atomic_load_explicit(&gd_mem_peak, memory_order_relaxed);
    out[2] = atomic_load_explicit(&gd_mem_count, memory_order_relaxed);
    out[3] = atomic_load_explicit(&gd_mem_reserved, memory_order_relaxed);
}

void gd_cpu_reset_peak(void)
{
    atomic_store_explicit(&gd_mem_peak, atomic_load_explicit(&gd_mem_allocated, memory_order_relaxed),
                          memory_order_relaxed);
}

/* ------------------------------------------------------------------------------------------
 * devices and copies
 *
 * glibc's memcpy streams close to one core's share of the memory bandwidth; copies of
 * several MiB are split over the threads, which measured 10-15% faster here.
 * ---------------------------------------------------------------------------------------- */

static int cpu_device_count(void) { return 1; }

static int cpu_synchronize(int device, gd_error *err)
{
    (void)device;
    (void)err;
    return GD_OK; /* CPU work is finished when its call returns */
}

typedef struct gd_copy_job {
    char *dst;
    const char *src;
} gd_copy_job;

static void gd_copy_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_copy_job *job = ctx;
    memcpy(job->dst + begin, job->src + begin, (size_t)(end - begin));
}

static void gd_copy_bytes(void *dst, const void *src, size_t nbytes)
{
    if (nbytes == 0 || dst == src) return;
    int nt = gd_threads_for((int64_t)nbytes, GD_PAR_COPY_BYTES);
    if (nt <= 1) {
        memcpy(dst, src, nbytes);
        return;
    }
    gd_copy_job job = {dst, src};
    gd_parallel_for(nt, (int64_t)nbytes, 4096, gd_copy_range, &job);
}

static int cpu_copy_from_host(void *dst, int device, const void *host_src, size_t nbytes, gd_error *err)
{
    (void)device;
    (void)err;
    gd_copy_bytes(dst, host_src, nbytes);
    return GD_OK;
}

static int cpu_copy_to_host(void *host_dst, const void *src, int device, size_t nbytes, gd_error *err)
{
    (void)device;
    (void)err;
    gd_copy_bytes(host_dst, src, nbytes);
    return GD_OK;
}

static int cpu_copy_device(void *dst, int dst_device, const void *src, int src_device, size_t nbytes,
                           gd_error *err)
{
    (void)dst_device;
    (void)src_device;
    (void)err;
    gd_copy_bytes(dst, src, nbytes);
    return GD_OK;
}

static int cpu_copy_2d(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t width,
                       size_t height, int device, gd_error *err)
{
    (void)device;
    (void)err;
    if (width == 0 || height == 0) return GD_OK;
    if (dst_pitch == width && src_pitch == width) {
        gd_copy_bytes(dst, src, width * height);
        return GD_OK;
    }
    char *d = dst;
    const char *s = src;
    for (size_t r = 0; r < height; r++) memcpy(d + r * dst_pitch, s + r * src_pitch, width);
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * elementwise kernels
 *
 * A kernel handles one run of n output elements: out[i] = f(a[i * sa], b[i * sb]).
 * Stride 1 (contiguous) and 0 (broadcast or scalar) get loops of their own, which the
 * compiler vectorizes; out may be a or b itself (in-place forms). Integer arithmetic is
 * done in uint64 so overflow wraps as in NumPy instead of being undefined behaviour.
 * ---------------------------------------------------------------------------------------- */

typedef void (*gd_un_kernel)(void *out, const void *a, int64_t sa, int64_t n);
typedef void (*gd_bin_kernel)(void *out, const void *a, int64_t sa, const void *b, int64_t sb, int64_t n);

#define GD_DEFINE_UNARY(NAME, T, EXPR)                                                           \
    GD_SIMD static void NAME(void *out_, const void *a_, int64_t sa, int64_t n)                  \
    {                                                                                            \
        T *out = out_;                                                                           \
        const T *a = a_;                                                                         \
        if (sa == 1) {                                                                           \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T x = a[i];                                                                      \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        } else if (sa == 0) {                                                                    \
            T x = a[0];                                                                          \
            T v = (EXPR);                                                                        \
            for (int64_t i = 0; i < n; i++) out[i] = v;                                          \
        } else {                                                                                 \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T x = a[i * sa];                                                                 \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        }                                                                                        \
    }

#define GD_DEFINE_BINARY(NAME, T, EXPR)                                                          \
    GD_SIMD static void NAME(void *out_, const void *a_, int64_t sa, const void *b_, int64_t sb, \
                             int64_t n)                                                          \
    {                                                                                            \
        T *out = out_;                                                                           \
        const T *a = a_, *b = b_;                                                                \
        if (sa == 1 && sb == 1) {                                                                \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T x = a[i], y = b[i];                                                            \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        } else if (sa == 1 && sb == 0) {                                                         \
            const T y = b[0];                                                                    \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T x = a[i];                                                                      \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        } else if (sa == 0 && sb == 1) {                                                         \
            const T x = a[0];                                                                    \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T y = b[i];                                                                      \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        } else {                                                                                 \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T x = a[i * sa], y = b[i * sb];                                                  \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        }                                                                                        \
    }

#define GD_U64(v) ((uint64_t)(v))
#define GD_WRAP(v) ((int64_t)(v)) /* uint64 -> int64 keeps the bits (GCC, Clang, MSVC) */

/* base ** exp by squaring in uint64, wrapping like NumPy. ops.c rejects negative exponents;
 * they get the truncated value of the exact result (0 unless base is 1 or -1). */
static inline int64_t gd_ipow(int64_t base, int64_t exp)
{
    if (exp < 0) return base == 1 ? 1 : base == -1 ? ((exp & 1) ? -1 : 1) : 0;
    uint64_t b = GD_U64(base), r = 1;
    for (uint64_t e = GD_U64(exp); e; e >>= 1) {
        if (e & 1) r *= b;
        b *= b;
    }
    return GD_WRAP(r);
}

/* NaN-propagating max/min (NumPy's maximum/minimum); written so they vectorize to a
 * compare and a blend. */
#define GD_FMAX(x, y) (((x) > (y) || (x) != (x)) ? (x) : (y))
#define GD_FMIN(x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))

#define GD_FLOAT_ELEMENTWISE(S, T, FABS, EXP, LOG, SQRT, TANH, POW)                              \
    GD_DEFINE_UNARY(un_copy_##S, T, x)                                                           \
    GD_DEFINE_UNARY(un_neg_##S, T, -x)                                                           \
    GD_DEFINE_UNARY(un_abs_##S, T, FABS(x))                                                      \
    GD_DEFINE_UNARY(un_relu_##S, T, (x > 0 || x != x) ? x : (T)0)                                \
    GD_DEFINE_UNARY(un_exp_##S, T, EXP(x))                                                       \
    GD_DEFINE_UNARY(un_log_##S, T, LOG(x))                                                       \
    GD_DEFINE_UNARY(un_sqrt_##S, T, SQRT(x))                                                     \
    GD_DEFINE_UNARY(un_tanh_##S, T, TANH(x))                                                     \
    GD_DEFINE_UNARY(un_square_##S, T, x * x)                                                     \
    GD_DEFINE_BINARY(bin_add_##S, T, x + y)                                                      \
    GD_DEFINE_BINARY(bin_sub_##S, T, x - y)                                                      \
    GD_DEFINE_BINARY(bin_mul_##S, T, x * y)                                                      \
    GD_DEFINE_BINARY(bin_div_##S, T, x / y)                                                      \
    GD_DEFINE_BINARY(bin_pow_##S, T, POW(x, y))                                                  \
    GD_DEFINE_BINARY(bin_max_##S, T, GD_FMAX(x, y))                                              \
    GD_DEFINE_BINARY(bin_min_##S, T, GD_FMIN(x, y))

GD_FLOAT_ELEMENTWISE(f32, float, fabsf, expf, logf, sqrtf, tanhf, powf)
GD_FLOAT_ELEMENTWISE(f64, double, fabs, exp, log, sqrt, tanh, pow)

GD_DEFINE_UNARY(un_copy_i64, int64_t, x)
GD_DEFINE_UNARY(un_neg_i64, int64_t, GD_WRAP(0 - GD_U64(x)))
GD_DEFINE_UNARY(un_abs_i64, int64_t, x < 0 ? GD_WRAP(0 - GD_U64(x)) : x)
GD_DEFINE_UNARY(un_relu_i64, int64_t, x > 0 ? x : 0)
GD_DEFINE_UNARY(un_square_i64, int64_t, GD_WRAP(GD_U64(x) * GD_U64(x)))
GD_DEFINE_BINARY(bin_add_i64, int64_t, GD_WRAP(GD_U64(x) + GD_U64(y)))
GD_DEFINE_BINARY(bin_sub_i64, int64_t, GD_WRAP(GD_U64(x) - GD_U64(y)))
GD_DEFINE_BINARY(bin_mul_i64, int64_t, GD_WRAP(GD_U64(x) * GD_U64(y)))
GD_DEFINE_BINARY(bin_pow_i64, int64_t, gd_ipow(x, y))
GD_DEFINE_BINARY(bin_max_i64, int64_t, x > y ? x : y)
GD_DEFINE_BINARY(bin_min_i64, int64_t, x < y ? x : y)

/* [op][dtype]; NULL where the dtype has no such operation (ops.c casts those first). */
static const gd_un_kernel gd_un_kernels[GD_NUM_UNOPS][GD_NUM_DTYPES] = {
    [GD_COPY] = {un_copy_f32, un_copy_f64, un_copy_i64},
    [GD_NEG] = {un_neg_f32, un_neg_f64, un_neg_i64},
    [GD_ABS] = {un_abs_f32, un_abs_f64, un_abs_i64},
    [GD_RELU] = {un_relu_f32, un_relu_f64, un_relu_i64},
    [GD_EXP] = {un_exp_f32, un_exp_f64, NULL},
    [GD_LOG] = {un_log_f32, un_log_f64, NULL},
    [GD_SQRT] = {un_sqrt_f32, un_sqrt_f64, NULL},
    [GD_TANH] = {un_tanh_f32, un_tanh_f64, NULL},
    [GD_SQUARE] = {un_square_f32, un_square_f64, un_square_i64},
};

static const gd_bin_kernel gd_bin_kernels[GD_NUM_BINOPS][GD_NUM_DTYPES] = {
    [GD_ADD] = {bin_add_f32, bin_add_f64, bin_add_i64},
    [GD_SUB] = {bin_sub_f32, bin_sub_f64, bin_sub_i64},
    [GD_MUL] = {bin_mul_f32, bin_mul_f64, bin_mul_i64},
    [GD_DIV] = {bin_div_f32, bin_div_f64, NULL},
    [GD_POW] = {bin_pow_f32, bin_pow_f64, bin_pow_i64},
    [GD_MAXIMUM] = {bin_max_f32, bin_max_f64, bin_max_i64},
    [GD_MINIMUM] = {bin_min_f32, bin_min_f64, bin_min_i64},
};

/* Operations that call libm or loop per element: worth threads at smaller sizes. */
static int gd_unop_is_costly(gd_unop op) { return op == GD_EXP || op == GD_LOG || op == GD_TANH; }

/* ------------------------------------------------------------------------------------------
 * elementwise driver: contiguous fast path and the strided N-d walk
 * ---------------------------------------------------------------------------------------- */

static const int64_t gd_zero_strides[GD_MAX_NDIM];

typedef struct gd_ewise_job {
    const gd_ewise *ew;
    char *out;
    size_t esz;
    int nin;                         /* 1 (unary) or 2 (binary) */
    const char *in[2];
    const int64_t *strides[2];       /* per output axis, elements; zeros for a scalar */
    int64_t contig_stride[2];        /* contiguous path: 1 for arrays, 0 for scalars */
    gd_un_kernel un;
    gd_bin_kernel bin;
} gd_ewise_job;

static inline void gd_ewise_run(const gd_ewise_job *job, char *out, const char *a, int64_t sa,
                                const char *b, int64_t sb, int64_t n)
{
    if (job->nin == 1)
        job->un(out, a, sa, n);
    else
        job->bin(out, a, sa, b, sb, n);
}

static void gd_ewise_contig_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_ewise_job *job = ctx;
    const int64_t s0 = job->contig_stride[0], s1 = job->contig_stride[1];
    const int64_t e = (int64_t)job->esz;
    gd_ewise_run(job, job->out + begin * e, job->in[0] + begin * s0 * e, s0,
                 job->nin == 2 ? job->in[1] + begin * s1 * e : NULL, s1, end - begin);
}

/* Output elements [begin, end) of an N-d operation: runs along the innermost axis go to
 * the kernel; an index counter steps the outer axes and keeps each operand's offset. */
static void gd_ewise_strided_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_ewise_job *job = ctx;
    const gd_ewise *ew = job->ew; /* ndim >= 2: fewer axes take the contiguous path */
    const int64_t e = (int64_t)job->esz;
    const int last = ew->ndim - 1;
    const int64_t inner = ew->shape[last];
    int64_t idx[GD_MAX_NDIM];
    int64_t row_off[2] = {0, 0}, inner_stride[2] = {0, 0};
    int64_t row = begin / inner, col = begin % inner;
    for (int k = last - 1; k >= 0; k--) {
        idx[k] = row % ew->shape[k];
        row /= ew->shape[k];
    }
    for (int j = 0; j < job->nin; j++) {
        inner_stride[j] = job->strides[j][last];
        for (int k = 0; k < last; k++) row_off[j] += idx[k] * job->strides[j][k];
    }
    for (int64_t pos = begin; pos < end;) {
        int64_t n = GD_MIN(inner - col, end - pos);
        gd_ewise_run(job, job->out + pos * e, job->in[0] + (row_off[0] + col * inner_stride[0]) * e,
                     inner_stride[0],
                     job->nin == 2 ? job->in[1] + (row_off[1] + col * inner_stride[1]) * e : NULL,
                     inner_stride[1], n);
        pos += n;
        col = 0;
        for (int k = last - 1; k >= 0; k--) { /* odometer step over the outer axes */
            for (int j = 0; j < job->nin; j++) row_off[j] += job->strides[j][k];
            if (++idx[k] < ew->shape[k]) break;
            for (int j = 0; j < job->nin; j++) row_off[j] -= job->strides[j][k] * ew->shape[k];
            idx[k] = 0;
        }
    }
}

/* A scalar operand becomes a one-element buffer read with stride 0. */
static const char *gd_operand_data(const gd_operand *op, gd_dtype dtype, gd_word *buf)
{
    if (op->data) return op->data;
    if (dtype == GD_FLOAT32)
        buf->f = (float)op->scalar.f;
    else if (dtype == GD_FLOAT64)
        buf->d = op->scalar.f;
    else
        buf->i = op->scalar.i;
    return (const char *)buf;
}

static void gd_ewise_execute(gd_ewise_job *job, const gd_operand *const *ops, int64_t par_min)
{
    const gd_ewise *ew = job->ew;
    int nt = gd_threads_for(ew->size, par_min);
    if (ew->contiguous || ew->ndim <= 1) {
        /* one run: stride 1 (contiguous), 0 (scalar, broadcast, 0-d) or a 1-d operand's own */
        for (int j = 0; j < job->nin; j++)
            job->contig_stride[j] = !ops[j]->data || ew->ndim == 0 ? 0 : ew->contiguous ? 1 : ops[j]->strides[0];
        if (nt <= 1)
            gd_ewise_run(job, job->out, job->in[0], job->contig_stride[0], job->in[1], job->contig_stride[1],
                         ew->size);
        else
            gd_parallel_for(nt, ew->size, 16, gd_ewise_contig_range, job);
        return;
    }
    for (int j = 0; j < job->nin; j++) job->strides[j] = ops[j]->data ? ops[j]->strides : gd_zero_strides;
    gd_parallel_for(nt, ew->size, 16, gd_ewise_strided_range, job);
}

static int cpu_unary(void *out, gd_unop op, gd_dtype dtype, const gd_ewise *ew, const gd_operand *a,
                     int device, gd_error *err)
{
    (void)device;
    if ((unsigned)op >= GD_NUM_UNOPS)
        return gd_set_error(err, GD_ERR_VALUE, "unary: unknown operation code %d", (int)op);
    if ((unsigned)dtype >= GD_NUM_DTYPES) return gd_bad_dtype(err, gd_unop_names[op], dtype);
    gd_un_kernel k = gd_un_kernels[op][dtype];
    if (!k)
        return gd_set_error(err, GD_ERR_VALUE, "%s: not defined for %s arrays; convert with astype(float64) first",
                       gd_unop_names[op], gd_dtype_names[dtype]);
    gd_word sbuf;
    gd_ewise_job job = {.ew = ew, .out = out, .esz = gd_dtype_size(dtype), .nin = 1, .un = k};
    job.in[0] = gd_operand_data(a, dtype, &sbuf);
    job.in[1] = NULL;
    const gd_operand *ops[1] = {a};
    gd_ewise_execute(&job, ops, gd_unop_is_costly(op) ? GD_PAR_COSTLY : GD_PAR_CHEAP);
    return GD_OK;
}

static int cpu_binary(void *out, gd_binop op, gd_dtype dtype, const gd_ewise *ew, const gd_operand *a,
                      const gd_operand *b, int device, gd_error *err)
{
    if ((unsigned)op >= GD_NUM_BINOPS)
        return gd_set_error(err, GD_ERR_VALUE, "binary: unknown operation code %d", (int)op);
    if ((unsigned)dtype >= GD_NUM_DTYPES) return gd_bad_dtype(err, gd_binop_names[op], dtype);
    gd_bin_kernel k = gd_bin_kernels[op][dtype];
    if (!k)
        return gd_set_error(err, GD_ERR_VALUE, "%s: not defined for %s arrays; convert with astype(float64) first",
                       gd_binop_names[op], gd_dtype_names[dtype]);
    /* a ** 2 is a * a exactly (one rounding), and far cheaper than pow */
    if (op == GD_POW && dtype != GD_INT64 && !b->data && b->scalar.f == 2.0)
        return cpu_unary(out, GD_SQUARE, dtype, ew, a, device, err);
    gd_word abuf, bbuf;
    gd_ewise_job job = {.ew = ew, .out = out, .esz = gd_dtype_size(dtype), .nin = 2, .bin = k};
    job.in[0] = gd_operand_data(a, dtype, &abuf);
    job.in[1] = gd_operand_data(b, dtype, &bbuf);
    const gd_operand *ops[2] = {a, b};
    gd_ewise_execute(&job, ops, op == GD_POW ? GD_PAR_COSTLY : GD_PAR_CHEAP);
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * astype
 *
 * C casts, except float -> int64 of NaN, infinities and values outside int64's range,
 * which C leaves undefined: they become INT64_MIN, what NumPy gives on x86-64.
 * ---------------------------------------------------------------------------------------- */

typedef void (*gd_cast_kernel)(void *out, const void *in, int64_t n);

#define GD_F2I(x) (((x) >= -0x1p63 && (x) < 0x1p63) ? (int64_t)(x) : INT64_MIN)

#define GD_DEFINE_CAST(NAME, TO, FROM, EXPR)                                                     \
    GD_SIMD static void NAME(void *out_, const void *in_, int64_t n)                             \
    {                                                                                            \
        TO *out = out_;                                                                          \
        const FROM *in = in_;                                                                    \
        for (int64_t i = 0; i < n; i++) {                                                        \
            FROM x = in[i];                                                                      \
            out[i] = (EXPR);                                                                     \
        }                                                                                        \
    }

GD_DEFINE_CAST(cast_f32_f64, float, double, (float)x)
GD_DEFINE_CAST(cast_f32_i64, float, int64_t, (float)x)
GD_DEFINE_CAST(cast_f64_f32, double, float, (double)x)
GD_DEFINE_CAST(cast_f64_i64, double, int64_t, (double)x)
GD_DEFINE_CAST(cast_i64_f32, int64_t, float, GD_F2I(x))
GD_DEFINE_CAST(cast_i64_f64, int64_t, double, GD_F2I(x))

/* [out dtype][in dtype]; the diagonal is a plain copy */
static const gd_cast_kernel gd_cast_kernels[GD_NUM_DTYPES][GD_NUM_DTYPES] = {
    [GD_FLOAT32] = {NULL, cast_f32_f64, cast_f32_i64},
    [GD_FLOAT64] = {cast_f64_f32, NULL, cast_f64_i64},
    [GD_INT64] = {cast_i64_f32, cast_i64_f64, NULL},
};

typedef struct gd_cast_job {
    gd_cast_kernel k;
    char *out;
    const char *in;
    size_t out_esz, in_esz;
} gd_cast_job;

static void gd_cast_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_cast_job *job = ctx;
    job->k(job->out + begin * (int64_t)job->out_esz, job->in + begin * (int64_t)job->in_esz, end - begin);
}

static int cpu_astype(void *out, gd_dtype out_dtype, const void *in, gd_dtype in_dtype, int64_t n, int device,
                      gd_error *err)
{
    (void)device;
    if ((unsigned)out_dtype >= GD_NUM_DTYPES) return gd_bad_dtype(err, "astype", out_dtype);
    if ((unsigned)in_dtype >= GD_NUM_DTYPES) return gd_bad_dtype(err, "astype", in_dtype);
    if (n <= 0) return GD_OK;
    if (out_dtype == in_dtype) {
        gd_copy_bytes(out, in, (size_t)n * gd_dtype_size(in_dtype));
        return GD_OK;
    }
    gd_cast_job job = {gd_cast_kernels[out_dtype][in_dtype], out, in, gd_dtype_size(out_dtype),
                       gd_dtype_size(in_dtype)};
    gd_parallel_for(gd_threads_for(n, GD_PAR_CHEAP), n, 16, gd_cast_range, &job);
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * reduction kernels
 *
 * Each kernel reduces elements of type T into accumulators of type A (double for float
 * input and for int64 input with a float64 result, uint64 for wrapping int64 sums, int64
 * for int64 max/min). A row reduction keeps GD_LANES accumulators so the loop vectorizes
 * without reassociating a single sum; float32 sums therefore stay at float64 accuracy.
 * ---------------------------------------------------------------------------------------- */

typedef void (*gd_red_row_fn)(void *res, const void *x, int64_t n);     /* *res = reduce(x[:n]) */
typedef void (*gd_red_cols_fn)(void *acc, const void *x, int64_t n);    /* acc[i] op= x[i] */

#define GD_DEFINE_REDUCTION(NAME, T, A, IDENT, LOAD, COMBINE)                                    \
    GD_SIMD static void NAME##_row(void *res, const void *x_, int64_t n)                         \
    {                                                                                            \
        const T *x = x_;                                                                         \
        A acc[GD_LANES];                                                                         \
        for (int j = 0; j < GD_LANES; j++) acc[j] = (IDENT);                                     \
        int64_t i = 0;                                                                           \
        for (; i + GD_LANES <= n; i += GD_LANES)                                                 \
            for (int j = 0; j < GD_LANES; j++) {                                                 \
                A v = LOAD(x[i + j]);                                                            \
                acc[j] = COMBINE(acc[j], v);                                                     \
            }                                                                                    \
        for (int j = 0; i < n; i++, j++) { /* the tail spreads over the lanes too */           \
            A v = LOAD(x[i]);                                                                    \
            acc[j] = COMBINE(acc[j], v);                                                         \
        }                                                                                        \
        for (int w = GD_LANES / 2; w > 0; w /= 2) /* a fixed tree: short dependency chain */     \
            for (int j = 0; j < w; j++) acc[j] = COMBINE(acc[j], acc[j + w]);                    \
        *(A *)res = acc[0];                                                                      \
    }                                                                                            \
    GD_SIMD static void NAME##_cols(void *acc_, const void *x_, int64_t n)                       \
    {                                                                                            \
        A *acc = acc_;                                                                           \
        const T *x = x_;                                                                         \
        for (int64_t i = 0; i < n; i++) {                                                        \
            A v = LOAD(x[i]);                                                                    \
            acc[i] = COMBINE(acc[i], v);                                                         \
        }                                                                                        \
    }

#define GD_LD(x) ((double)(x))
#define GD_LD_SQ(x) ((double)(x) * (double)(x))
#define GD_LU(x) GD_U64(x)
#define GD_LU_SQ(x) (GD_U64(x) * GD_U64(x))
#define GD_LI(x) (x)
#define GD_ADD(acc, v) ((acc) + (v))
#define GD_IMAX(acc, v) ((v) > (acc) ? (v) : (acc))
#define GD_IMIN(acc, v) ((v) < (acc) ? (v) : (acc))
/* v first: a NaN in either the new value or the accumulator survives */
#define GD_RMAX(acc, v) GD_FMAX(v, acc)
#define GD_RMIN(acc, v) GD_FMIN(v, acc)

GD_DEFINE_REDUCTION(red_sum_f32, float, double, 0.0, GD_LD, GD_ADD)
GD_DEFINE_REDUCTION(red_sum_f64, double, double, 0.0, GD_LD, GD_ADD)
GD_DEFINE_REDUCTION(red_sum_i64d, int64_t, double, 0.0, GD_LD, GD_ADD)
GD_DEFINE_REDUCTION(red_sum_i64, int64_t, uint64_t, 0, GD_LU, GD_ADD)
GD_DEFINE_REDUCTION(red_ssq_f32, float, double, 0.0, GD_LD_SQ, GD_ADD)
GD_DEFINE_REDUCTION(red_ssq_f64, double, double, 0.0, GD_LD_SQ, GD_ADD)
GD_DEFINE_REDUCTION(red_ssq_i64d, int64_t, double, 0.0, GD_LD_SQ, GD_ADD)
GD_DEFINE_REDUCTION(red_ssq_i64, int64_t, uint64_t, 0, GD_LU_SQ, GD_ADD)
GD_DEFINE_REDUCTION(red_max_f32, float, double, -INFINITY, GD_LD, GD_RMAX)
GD_DEFINE_REDUCTION(red_max_f64, double, double, -INFINITY, GD_LD, GD_RMAX)
GD_DEFINE_REDUCTION(red_max_i64, int64_t, int64_t, INT64_MIN, GD_LI, GD_IMAX)
GD_DEFINE_REDUCTION(red_min_f32, float, double, INFINITY, GD_LD, GD_RMIN)
GD_DEFINE_REDUCTION(red_min_f64, double, double, INFINITY, GD_LD, GD_RMIN)
GD_DEFINE_REDUCTION(red_min_i64, int64_t, int64_t, INT64_MAX, GD_LI, GD_IMIN)

/* How one reduction runs: its kernels, the kernels that combine partial accumulators
 * (a plain sum for SUMSQ too), the identity, and the accumulator type. */
typedef struct gd_red_desc {
    gd_red_row_fn row;
    gd_red_cols_fn cols;
    gd_red_row_fn merge_row;
    gd_red_cols_fn merge_cols;
    gd_word identity;
    int acc_double;
} gd_red_desc;

#define GD_RED_DESC(K, M, IDENT_FIELD, IDENT, ACC_DOUBLE) \
    ((gd_red_desc){K##_row, K##_cols, M##_row, M##_cols, {.IDENT_FIELD = (IDENT)}, (ACC_DOUBLE)})

static gd_red_desc gd_red_select(gd_redop op, gd_dtype in, gd_dtype out)
{
    /* int64 sums wrap like NumPy's when the result is int64; mean's float64 result
     * accumulates in double so large sums do not wrap */
    int int_acc = in == GD_INT64 && out == GD_INT64;
    switch (op) {
    case GD_RED_SUM:
        if (in == GD_FLOAT32) return GD_RED_DESC(red_sum_f32, red_sum_f64, d, 0.0, 1);
        if (in == GD_FLOAT64) return GD_RED_DESC(red_sum_f64, red_sum_f64, d, 0.0, 1);
        if (int_acc) return GD_RED_DESC(red_sum_i64, red_sum_i64, u, 0, 0);
        return GD_RED_DESC(red_sum_i64d, red_sum_f64, d, 0.0, 1);
    case GD_RED_SUMSQ:
        if (in == GD_FLOAT32) return GD_RED_DESC(red_ssq_f32, red_sum_f64, d, 0.0, 1);
        if (in == GD_FLOAT64) return GD_RED_DESC(red_ssq_f64, red_sum_f64, d, 0.0, 1);
        if (int_acc) return GD_RED_DESC(red_ssq_i64, red_sum_i64, u, 0, 0);
        return GD_RED_DESC(red_ssq_i64d, red_sum_f64, d, 0.0, 1);
    case GD_RED_MAX:
        if (in == GD_FLOAT32) return GD_RED_DESC(red_max_f32, red_max_f64, d, -INFINITY, 1);
        if (in == GD_FLOAT64) return GD_RED_DESC(red_max_f64, red_max_f64, d, -INFINITY, 1);
        return GD_RED_DESC(red_max_i64, red_max_i64, i, INT64_MIN, 0);
    default: /* GD_RED_MIN */
        if (in == GD_FLOAT32) return GD_RED_DESC(red_min_f32, red_min_f64, d, INFINITY, 1);
        if (in == GD_FLOAT64) return GD_RED_DESC(red_min_f64, red_min_f64, d, INFINITY, 1);
        return GD_RED_DESC(red_min_i64, red_min_i64, i, INT64_MAX, 0);
    }
}

/* out[start + i] = acc[i] converted to out_dtype, for i < n */
static void gd_red_store(void *out, gd_dtype out_dtype, int64_t start, const gd_word *acc, int64_t n,
                         int acc_double)
{
    for (int64_t i = 0; i < n; i++) {
        gd_word w = acc[i];
        switch (out_dtype) {
        case GD_FLOAT32: ((float *)out)[start + i] = acc_double ? (float)w.d : (float)w.i; break;
        case GD_FLOAT64: ((double *)out)[start + i] = acc_double ? w.d : (double)w.i; break;
        default: ((int64_t *)out)[start + i] = acc_double ? GD_F2I(w.d) : w.i; break;
        }
    }
}

/* ------------------------------------------------------------------------------------------
 * reduction driver
 *
 * out[o, i] = reduce over r of in[o, r, i] for the (outer, len, inner) view.
 * inner == 1: each row is a contiguous run, reduced as a fixed sequence of blocks whose
 *   partial results are combined in order; threads take blocks (one long row) or rows.
 * inner > 1: rows are accumulated into a tile of `inner` accumulators, one contiguous
 *   row segment at a time, so memory is read in order; threads take (o, tile) pairs, and
 *   long thin reductions also split r into fixed chunks merged afterwards.
 * Block and chunk boundaries depend only on the shape, never on the thread count, so a
 * result is the same bits with 1 or 64 threads.
 * ---------------------------------------------------------------------------------------- */

typedef struct gd_red_job {
    const gd_red_desc *d;
    const char *in;
    void *out;
    gd_dtype out_dtype;
    size_t esz;
    int64_t outer, len, inner;
    int64_t block;          /* rows: elements per block */
    gd_word *part;          /* rows: per-block results; columns: per-chunk accumulators */
    int64_t ntiles, nchunks, chunk_rows;
} gd_red_job;

static int64_t gd_red_block_size(int64_t len)
{
    int64_t b = GD_MAX(GD_RED_BLOCK, (len + GD_RED_MAX_BLOCKS - 1) / GD_RED_MAX_BLOCKS);
    return (b + GD_LANES - 1) / GD_LANES * GD_LANES;
}

static void gd_red_blocks_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_red_job *job = ctx;
    for (int64_t blk = begin; blk < end; blk++) {
        int64_t start = blk * job->block, n = GD_MIN(job->block, job->len - start);
        job->d->row(&job->part[blk], job->in + start * (int64_t)job->esz, n);
    }
}

/* A row longer than one block: blocks spread over nt threads, then merged in order. Kept
 * out of line so short rows (the tiny-op path) never set up its 8 KiB of partials. */
GD_NOINLINE static gd_word gd_red_blocked_row(const gd_red_desc *d, const char *x, size_t esz, int64_t len,
                                              int64_t block, int nt)
{
    gd_word part[GD_RED_MAX_BLOCKS], r;
    gd_red_job job = {.d = d, .in = x, .esz = esz, .len = len, .block = block, .part = part};
    int64_t nblocks = (len + block - 1) / block;
    gd_parallel_for(nt, nblocks, 1, gd_red_blocks_range, &job);
    d->merge_row(&r, part, nblocks);
    return r;
}

/* One contiguous row of len elements. */
static gd_word gd_red_one_row(const gd_red_desc *d, const char *x, size_t esz, int64_t len, int nt)
{
    int64_t block = gd_red_block_size(len);
    if (len > block) return gd_red_blocked_row(d, x, esz, len, block, nt);
    gd_word r;
    d->row(&r, x, len);
    return r;
}

static void gd_red_rows_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_red_job *job = ctx;
    for (int64_t o = begin; o < end; o++) {
        gd_word r = gd_red_one_row(job->d, job->in + o * job->len * (int64_t)job->esz, job->esz, job->len, 1);
        gd_red_store(job->out, job->out_dtype, o, &r, 1, job->d->acc_double);
    }
}

/* Job (o, tile, chunk) accumulates rows [chunk * chunk_rows, ...) of tile `tile` of outer
 * index o into acc (tile-width words). */
static void gd_red_cols_accumulate(const gd_red_job *job, gd_word *acc, int64_t o, int64_t tile, int64_t chunk)
{
    const int64_t i0 = tile * GD_RED_TILE, w = GD_MIN((int64_t)GD_RED_TILE, job->inner - i0);
    const int64_t r0 = chunk * job->chunk_rows, r1 = GD_MIN(job->len, r0 + job->chunk_rows);
    const int64_t e = (int64_t)job->esz;
    for (int64_t i = 0; i < w; i++) acc[i] = job->d->identity;
    const char *x = job->in + ((o * job->len + r0) * job->inner + i0) * e;
    for (int64_t r = r0; r < r1; r++, x += job->inner * e) job->d->cols(acc, x, w);
}

static void gd_red_tiles_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_red_job *job = ctx;
    gd_word acc[GD_RED_TILE];
    for (int64_t t = begin; t < end; t++) {
        int64_t o = t / job->ntiles, tile = t % job->ntiles;
        gd_red_cols_accumulate(job, acc, o, tile, 0);
        int64_t i0 = tile * GD_RED_TILE;
        gd_red_store(job->out, job->out_dtype, o * job->inner + i0, acc,
                     GD_MIN((int64_t)GD_RED_TILE, job->inner - i0), job->d->acc_double);
    }
}

/* Split mode: job t = (o, tile, chunk) writes its accumulators to part[(o, chunk, i)]. */
static void gd_red_chunks_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_red_job *job = ctx;
    for (int64_t t = begin; t < end; t++) {
        int64_t chunk = t % job->nchunks, rest = t / job->nchunks;
        int64_t o = rest / job->ntiles, tile = rest % job->ntiles;
        gd_word *acc = job->part + (o * job->nchunks + chunk) * job->inner + tile * GD_RED_TILE;
        gd_red_cols_accumulate(job, acc, o, tile, chunk);
    }
}

static int cpu_reduce(void *out, gd_dtype out_dtype, gd_redop op, const void *in, gd_dtype in_dtype,
                      int64_t outer, int64_t len, int64_t inner, int device, gd_error *err)
{
    (void)device;
    if ((unsigned)op >= GD_NUM_REDOPS)
        return gd_set_error(err, GD_ERR_VALUE, "reduce: unknown operation code %d", (int)op);
    if ((unsigned)in_dtype >= GD_NUM_DTYPES) return gd_bad_dtype(err, gd_redop_names[op], in_dtype);
    if (out_dtype != in_dtype && out_dtype != GD_FLOAT64) return gd_bad_dtype(err, gd_redop_names[op], out_dtype);
    if (outer < 0 || len < 0 || inner < 0)
        return gd_set_error(err, GD_ERR_VALUE, "%s: negative extent (outer=%lld, len=%lld, inner=%lld)",
                       gd_redop_names[op], (long long)outer, (long long)len, (long long)inner);
    if (len == 0 && (op == GD_RED_MAX || op == GD_RED_MIN) && outer * inner > 0)
        return gd_set_error(err, GD_ERR_VALUE, "%s: zero-size reduction has no identity; reduce a non-empty axis",
                       gd_redop_names[op]);
    if (outer == 0 || inner == 0) return GD_OK;

    const gd_red_desc d = gd_red_select(op, in_dtype, out_dtype);
    gd_red_job job = {.d = &d, .in = in, .out = out, .out_dtype = out_dtype, .esz = gd_dtype_size(in_dtype),
                      .outer = outer, .len = len, .inner = inner};
    const int64_t total = outer * len * inner;
    const int nt = gd_threads_for(total, GD_PAR_REDUCE);

    if (inner == 1) {
        if (nt > 1 && outer >= 4 * (int64_t)nt) {
            gd_parallel_for(nt, outer, 1, gd_red_rows_range, &job);
        } else {
            for (int64_t o = 0; o < outer; o++) {
                gd_word r = gd_red_one_row(&d, (const char *)in + o * len * (int64_t)job.esz, job.esz, len, nt);
                gd_red_store(out, out_dtype, o, &r, 1, d.acc_double);
            }
        }
        return GD_OK;
    }

    job.ntiles = (inner + GD_RED_TILE - 1) / GD_RED_TILE;
    const int split = total >= GD_PAR_REDUCE && len >= 2 * GD_RED_RCHUNK && outer * inner <= GD_RED_SPLIT_MAX;
    if (!split) {
        job.nchunks = 1;
        job.chunk_rows = len;
        gd_parallel_for(nt, outer * job.ntiles, 1, gd_red_tiles_range, &job);
        return GD_OK;
    }
    job.nchunks = GD_MIN((len + GD_RED_RCHUNK - 1) / GD_RED_RCHUNK, (int64_t)GD_RED_MAX_CHUNKS);
    job.chunk_rows = (len + job.nchunks - 1) / job.nchunks;
    job.nchunks = (len + job.chunk_rows - 1) / job.chunk_rows;
    size_t words = (size_t)(outer * job.nchunks * inner);
    job.part = malloc(words * sizeof(gd_word));
    if (!job.part) {
        char want[32];
        return gd_set_error(err, GD_ERR_HOST_OOM, "out of host memory allocating %s of %s scratch",
                       gd_format_bytes(want, sizeof want, words * sizeof(gd_word)), gd_redop_names[op]);
    }
    gd_parallel_for(nt, outer * job.ntiles * job.nchunks, 1, gd_red_chunks_range, &job);
    for (int64_t o = 0; o < outer; o++) {
        gd_word *acc = job.part + o * job.nchunks * inner;
        for (int64_t c = 1; c < job.nchunks; c++) d.merge_cols(acc, acc + c * inner, inner);
        gd_red_store(out, out_dtype, o * inner, acc, inner, d.acc_double);
    }
    free(job.part);
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * matrix products (OpenBLAS, row-major CBLAS)
 *
 * One product: OpenBLAS threads it. A batch of small products (1000 of 100x100 is the
 * benchmark) is spread over gpudev's threads instead, one fork-join for the whole batch,
 * each product on one core: OpenBLAS's own batch call synchronizes its threads after every
 * `nthreads` products, which costs more than the products on a busy machine. Inside that
 * region OpenBLAS must run single-threaded: called from an OpenMP thread, a multi-threaded
 * OpenBLAS (pthreads build) warns and can deadlock. It already is for m*n*k <= 64^3; for
 * larger products its thread count is lowered to 1 for the duration (gd_blas_single_begin:
 * a process-wide setting, so it is reference-counted and gd_cpu_set_num_threads defers).
 * ---------------------------------------------------------------------------------------- */

typedef struct gd_gemm_job {
    gd_dtype dtype;
    char *c;
    const char *a, *b;
    int m, n, k;
    int64_t stride_a, stride_b, stride_c; /* bytes */
} gd_gemm_job;

/* Row-major C (m, n) = A (m, k) @ B (k, n) for product p of the batch. */
static void gd_gemm_one(const gd_gemm_job *job, int64_t p)
{
    const char *a = job->a + p * job->stride_a, *b = job->b + p * job->stride_b;
    char *c = job->c + p * job->stride_c;
    if (job->dtype == GD_FLOAT32)
        scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, job->m, job->n, job->k, 1.0f,
                          (const float *)a, job->k, (const float *)b, job->n, 0.0f, (float *)c, job->n);
    else
        scipy_cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, job->m, job->n, job->k, 1.0,
                          (const double *)a, job->k, (const double *)b, job->n, 0.0, (double *)c, job->n);
}

static void gd_gemm_range(void *ctx, int64_t begin, int64_t end)
{
    for (int64_t p = begin; p < end; p++) gd_gemm_one(ctx, p);
}

static int cpu_gemm(void *c, gd_dtype dtype, const void *a, const void *b, int64_t batch, int64_t m, int64_t n,
                    int64_t k, int64_t stride_a, int64_t stride_b, int64_t stride_c, int device, gd_error *err)
{
    (void)device;
    if (dtype != GD_FLOAT32 && dtype != GD_FLOAT64)
        return gd_set_error(err, GD_ERR_VALUE, "matmul: %s is not supported by BLAS; convert with astype(float32) first",
                       (unsigned)dtype < GD_NUM_DTYPES ? gd_dtype_names[dtype] : "this dtype");
    if (batch < 0 || m < 0 || n < 0 || k < 0)
        return gd_set_error(err, GD_ERR_VALUE, "matmul: negative extent (batch=%lld, m=%lld, n=%lld, k=%lld)",
                       (long long)batch, (long long)m, (long long)n, (long long)k);
    if (batch == 0 || m == 0 || n == 0) return GD_OK;
    const size_t esz = gd_dtype_size(dtype);
    if (k == 0) { /* an empty sum: BLAS may leave C untouched */
        for (int64_t p = 0; p < batch; p++) memset((char *)c + p * stride_c * (int64_t)esz, 0, (size_t)(m * n) * esz);
        return GD_OK;
    }
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
        return gd_set_error(err, GD_ERR_VALUE,
                       "matmul: dimension too large for OpenBLAS's 32-bit interface (m=%lld, n=%lld, k=%lld; "
                       "each must be <= %d); split the product into blocks",
                       (long long)m, (long long)n, (long long)k, INT_MAX);

    gd_gemm_job job = {dtype, c, a, b, (int)m, (int)n, (int)k, stride_a * (int64_t)esz,
                       stride_b * (int64_t)esz, stride_c * (int64_t)esz};
    const double mnk = (double)m * (double)n * (double)k;
    const int nt = batch == 1 ? 1 : gd_threads_for((int64_t)GD_MIN((double)batch * mnk, 1e18), GD_GEMM_PAR_MNK);
    const int one_thread_already = mnk <= GD_GEMM_ONE_THREAD_MNK;
    if (nt <= 1 || !(one_thread_already || (mnk <= GD_GEMM_BATCH_MAX_MNK && batch >= 2 * (int64_t)nt))) {
        gd_gemm_range(&job, 0, batch); /* one product, or few large ones: OpenBLAS threads each */
        return GD_OK;
    }
    if (!one_thread_already) gd_blas_single_begin();
    /* a grab of products worth GD_GEMM_PAR_MNK multiply-adds: 64 of 16x16x16, one of 100^3 */
    const int64_t grain = GD_MAX((int64_t)1, (int64_t)((double)GD_GEMM_PAR_MNK / mnk));
    gd_parallel_for_dynamic(nt, batch, GD_MIN(grain, (batch + 2 * nt - 1) / (2 * nt)), gd_gemm_range, &job);
    if (!one_thread_already) gd_blas_single_end();
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * permute
 *
 * Axes of size 1 are dropped and output-adjacent axes that are also adjacent in the
 * input are merged, so most permutations become either row copies (the input's last axis
 * stays last) or a batch of 2-D transposes, done in GD_TILE x GD_TILE tiles so both the
 * reads and the writes stay within a few cache lines.
 * ---------------------------------------------------------------------------------------- */

typedef struct gd_permute_job {
    char *out;
    const char *in;
    size_t esz;
    int nd;
    int64_t shape[GD_MAX_NDIM];      /* output shape after merging */
    int64_t in_stride[GD_MAX_NDIM];  /* input stride of each output axis, elements */
    int64_t out_stride[GD_MAX_NDIM];
    int q;                           /* output axis with input stride 1 (transpose mode) */
    int64_t row_tiles;               /* tiles along axis q */
} gd_permute_job;

/* Offsets of flat index `flat` over all axes except `skip0` and `skip1` (-1: none). */
static void gd_permute_offsets(const gd_permute_job *job, int64_t flat, int skip0, int skip1, int64_t *in_off,
                               int64_t *out_off)
{
    *in_off = *out_off = 0;
    for (int k = job->nd - 1; k >= 0; k--) {
        if (k == skip0 || k == skip1) continue;
        int64_t i = flat % job->shape[k];
        flat /= job->shape[k];
        *in_off += i * job->in_stride[k];
        *out_off += i * job->out_stride[k];
    }
}

static void gd_permute_rows_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_permute_job *job = ctx;
    const int last = job->nd - 1;
    const size_t row_bytes = (size_t)job->shape[last] * job->esz;
    for (int64_t r = begin; r < end; r++) {
        int64_t in_off, out_off;
        gd_permute_offsets(job, r, last, -1, &in_off, &out_off);
        memcpy(job->out + out_off * (int64_t)job->esz, job->in + in_off * (int64_t)job->esz, row_bytes);
    }
}

/* out[j * os + i] = in[j + i * is] for j < rows, i < cols: one strip of tiles */
#define GD_DEFINE_TRANSPOSE(NAME, T)                                                             \
    static void NAME(void *out_, int64_t os, const void *in_, int64_t is, int64_t rows, int64_t cols) \
    {                                                                                            \
        T *out = out_;                                                                           \
        const T *in = in_;                                                                       \
        for (int64_t i0 = 0; i0 < cols; i0 += GD_TILE) {                                         \
            int64_t i1 = GD_MIN(cols, i0 + GD_TILE);                                             \
            for (int64_t j = 0; j < rows; j++)                                                   \
                for (int64_t i = i0; i < i1; i++) out[j * os + i] = in[j + i * is];              \
        }                                                                                        \
    }

GD_DEFINE_TRANSPOSE(gd_transpose_strip_4, uint32_t)
GD_DEFINE_TRANSPOSE(gd_transpose_strip_8, uint64_t)

static void gd_permute_tiles_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_permute_job *job = ctx;
    const int last = job->nd - 1, q = job->q;
    const int64_t e = (int64_t)job->esz;
    for (int64_t t = begin; t < end; t++) {
        int64_t batch = t / job->row_tiles, j0 = (t % job->row_tiles) * GD_TILE;
        int64_t rows = GD_MIN((int64_t)GD_TILE, job->shape[q] - j0);
        int64_t in_off, out_off;
        gd_permute_offsets(job, batch, q, last, &in_off, &out_off);
        char *o = job->out + (out_off + j0 * job->out_stride[q]) * e;
        const char *i = job->in + (in_off + j0) * e;
        if (e == 4)
            gd_transpose_strip_4(o, job->out_stride[q], i, job->in_stride[last], rows, job->shape[last]);
        else
            gd_transpose_strip_8(o, job->out_stride[q], i, job->in_stride[last], rows, job->shape[last]);
    }
}

static int cpu_permute(void *out, gd_dtype dtype, const void *in, int ndim, const int64_t *in_shape, const int *perm,
                       int device, gd_error *err)
{
    (void)device;
    if ((unsigned)dtype >= GD_NUM_DTYPES) return gd_bad_dtype(err, "transpose", dtype);
    if (ndim < 0 || ndim > GD_MAX_NDIM)
        return gd_set_error(err, GD_ERR_VALUE, "transpose: %d axes given; at most %d are supported", ndim, GD_MAX_NDIM);
    int64_t stride[GD_MAX_NDIM], total = 1;
    for (int k = ndim - 1; k >= 0; k--) {
        stride[k] = total;
        total *= in_shape[k];
    }
    if (total == 0) return GD_OK;

    gd_permute_job job = {.out = out, .in = in, .esz = gd_dtype_size(dtype), .nd = 0};
    for (int k = 0; k < ndim; k++) {
        int p = perm[k];
        if (p < 0 || p >= ndim)
            return gd_set_error(err, GD_ERR_VALUE, "transpose: axis %d in the permutation is out of range for %d axes", p,
                           ndim);
        if (in_shape[p] == 1) continue;
        if (job.nd > 0 && job.in_stride[job.nd - 1] == stride[p] * in_shape[p]) {
            job.shape[job.nd - 1] *= in_shape[p]; /* continues the previous axis in the input too */
            job.in_stride[job.nd - 1] = stride[p];
        } else {
            job.shape[job.nd] = in_shape[p];
            job.in_stride[job.nd] = stride[p];
            job.nd++;
        }
    }
    if (job.nd <= 1) { /* at most one axis of size > 1: the order is unchanged */
        gd_copy_bytes(out, in, (size_t)total * job.esz);
        return GD_OK;
    }
    int64_t out_elems = 1;
    for (int k = job.nd - 1; k >= 0; k--) {
        job.out_stride[k] = out_elems;
        out_elems *= job.shape[k];
    }
    const int last = job.nd - 1;
    const int nt = gd_threads_for(total, GD_PAR_CHEAP);
    if (job.in_stride[last] == 1) {
        gd_parallel_for(nt, total / job.shape[last], 1, gd_permute_rows_range, &job);
        return GD_OK;
    }
    job.q = 0;
    while (job.in_stride[job.q] != 1) job.q++; /* the input's last axis; never `last` here */
    job.row_tiles = (job.shape[job.q] + GD_TILE - 1) / GD_TILE;
    int64_t batches = total / (job.shape[job.q] * job.shape[last]);
    gd_parallel_for(nt, batches * job.row_tiles, 1, gd_permute_tiles_range, &job);
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * arange
 * ---------------------------------------------------------------------------------------- */

typedef struct gd_arange_job {
    void *out;
    gd_dtype dtype;
    gd_scalar start, step;
} gd_arange_job;

GD_SIMD static void gd_arange_f32(float *out, double start, double step, int64_t begin, int64_t end)
{
    for (int64_t i = begin; i < end; i++) out[i] = (float)(start + (double)i * step);
}

GD_SIMD static void gd_arange_f64(double *out, double start, double step, int64_t begin, int64_t end)
{
    for (int64_t i = begin; i < end; i++) out[i] = start + (double)i * step;
}

GD_SIMD static void gd_arange_i64(int64_t *out, int64_t start, int64_t step, int64_t begin, int64_t end)
{
    for (int64_t i = begin; i < end; i++) out[i] = GD_WRAP(GD_U64(start) + GD_U64(i) * GD_U64(step));
}

static void gd_arange_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_arange_job *job = ctx;
    if (job->dtype == GD_FLOAT32)
        gd_arange_f32(job->out, job->start.f, job->step.f, begin, end);
    else if (job->dtype == GD_FLOAT64)
        gd_arange_f64(job->out, job->start.f, job->step.f, begin, end);
    else
        gd_arange_i64(job->out, job->start.i, job->step.i, begin, end);
}

static int cpu_arange(void *out, gd_dtype dtype, gd_scalar start, gd_scalar step, int64_t n, int device,
                      gd_error *err)
{
    (void)device;
    if ((unsigned)dtype >= GD_NUM_DTYPES) return gd_bad_dtype(err, "arange", dtype);
    if (n <= 0) return GD_OK;
    gd_arange_job job = {out, dtype, start, step};
    gd_parallel_for(gd_threads_for(n, GD_PAR_CHEAP), n, 16, gd_arange_range, &job);
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * random numbers: Philox4x32-10 exactly as philox.h lays it out (the CUDA kernel runs the
 * same functions), one block of `per` elements at a time.
 * ---------------------------------------------------------------------------------------- */

typedef struct gd_random_job {
    void *out;
    int f32, normal;
    uint64_t seed, offset;
    int64_t n;
} gd_random_job;

static void gd_random_range(void *ctx, int64_t begin, int64_t end) /* blocks [begin, end) */
{
    const gd_random_job *job = ctx;
    const int64_t per = GD_PHILOX_PER_BLOCK(job->f32);
    for (int64_t blk = begin; blk < end; blk++) {
        const uint64_t counter = job->offset + (uint64_t)blk;
        const int64_t first = blk * per, count = GD_MIN(per, job->n - first);
        if (job->f32) {
            float v[4];
            gd_philox_block_f32(v, job->normal, counter, job->seed);
            memcpy((float *)job->out + first, v, (size_t)count * sizeof(float));
        } else {
            double v[2];
            gd_philox_block_f64(v, job->normal, counter, job->seed);
            memcpy((double *)job->out + first, v, (size_t)count * sizeof(double));
        }
    }
}

static int cpu_random(void *out, gd_dtype dtype, gd_random_kind kind, uint64_t seed, uint64_t offset, int64_t n,
                      int device, gd_error *err)
{
    (void)device;
    if (dtype != GD_FLOAT32 && dtype != GD_FLOAT64)
        return gd_set_error(err, GD_ERR_VALUE, "random: %s is not supported; random numbers are float32 or float64",
                       (unsigned)dtype < GD_NUM_DTYPES ? gd_dtype_names[dtype] : "this dtype");
    if (kind != GD_RAND_UNIFORM && kind != GD_RAND_NORMAL)
        return gd_set_error(err, GD_ERR_VALUE, "random: unknown distribution code %d", (int)kind);
    if (n <= 0) return GD_OK;
    gd_random_job job = {out, dtype == GD_FLOAT32, kind == GD_RAND_NORMAL, seed, offset, n};
    const int64_t per = GD_PHILOX_PER_BLOCK(job.f32);
    gd_parallel_for(gd_threads_for(n, GD_PAR_COSTLY), (n + per - 1) / per, 16, gd_random_range, &job);
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * the vtable
 * ---------------------------------------------------------------------------------------- */

const gd_backend gd_cpu_backend = {
    .abi_version = GD_BACKEND_ABI_VERSION,
    .name = "cpu",
    .device_count = cpu_device_count,
    .synchronize = cpu_synchronize,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy_from_host = cpu_copy_from_host,
    .copy_to_host = cpu_copy_to_host,
    .copy_device = cpu_copy_device,
    .copy_2d = cpu_copy_2d,
    .unary = cpu_unary,
    .binary = cpu_binary,
    .astype = cpu_astype,
    .reduce = cpu_reduce,
    .gemm = cpu_gemm,
    .permute = cpu_permute,
    .arange = cpu_arange,
    .random = cpu_random,
};
