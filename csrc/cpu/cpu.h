/* cpu.h - internals of the CPU backend shared by its files: portability macros, the 8-byte
 * word kernels accumulate in, and the vtable entries each file defines (backend_cpu.c puts
 * them in the table). Nothing here is seen outside csrc/cpu; the core sees only backend_cpu.h.
 *
 * Every entry computes and returns; the core has already checked shapes, dtypes and devices.
 * Small inputs run straight through a contiguous loop on the calling thread (a 4x4 add must
 * cost a few nanoseconds here); large ones are split over threads (threads.h, which also
 * holds the work sizes worth threads for each kind of operation). Results do not depend on
 * the thread count. Nothing here touches Python, so every entry may run
 * without the GIL, from many threads.
 */
#ifndef GPUDEV_CPU_H
#define GPUDEV_CPU_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gpudev.h"
#include "threads.h"

/* ------------------------------------------------------------------------------------------
 * portability and arithmetic macros
 * ---------------------------------------------------------------------------------------- */

/* GD_SIMD (AVX-512 and AVX2 clones of hot loops), GD_NOINLINE and the vector extensions of
 * the kernels below are spelled in compiler.h (gpudev.h includes it). */

#define GD_MIN(a, b) ((a) < (b) ? (a) : (b))
#define GD_MAX(a, b) ((a) > (b) ? (a) : (b))
#define GD_ABS64(v) ((v) < 0 ? -(v) : (v)) /* strides: never INT64_MIN */

/* Integer arithmetic is done in uint64 so overflow wraps as in NumPy instead of being
 * undefined behaviour. */
#define GD_U64(v) ((uint64_t)(v))
#define GD_WRAP(v) ((int64_t)(v)) /* uint64 -> int64 keeps the bits (GCC, Clang, MSVC) */

/* NaN-propagating max/min (NumPy's maximum/minimum); written so they vectorize to a
 * compare and a blend. */
#define GD_FMAX(x, y) (((x) > (y) || (x) != (x)) ? (x) : (y))
#define GD_FMIN(x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))

/* Bytes in one vector of GCC's vector extensions (GD_DEFINE_EXTREME, argreduce.c): an AVX2
 * register. Not 64: GCC then builds every vector in memory in the AVX2 clone, and even in
 * the AVX-512 one (a 256x256 max(axis=1) took 92-158 us instead of 10-12). The plain-C loops
 * that replace them without vector extensions keep as many lanes. */
#define GD_VEC_BYTES 32

/* Lanes of x where the mask k is set, of y elsewhere: the blend of the vector code below,
 * for masks (GD_MSEL) and for vectors `vec` with masks `mvec` in scope (GD_VSEL). GCC's C
 * has no ?: on vectors. */
#define GD_MSEL(k, x, y) (((x) & (k)) | ((y) & ~(k)))
#define GD_VSEL(k, x, y) ((vec)GD_MSEL(k, (mvec)(x), (mvec)(y)))

/* GD_DEFINE_EXTREME's end, in either form: the scalar tail from x[i] on into r, then the
 * row's first NaN instead when one was seen (any). */
#define GD_EXTREME_TAIL(T, CMP)                                                                  \
        for (; i < n; i++) {                                                                     \
            const T v = x[i];                                                                    \
            any |= v != v;                                                                       \
            r = v CMP r ? v : r;                                                                 \
        }                                                                                        \
        if (any)                                                                                 \
            for (i = 0; i < n; i++)                                                              \
                if (x[i] != x[i]) return x[i];                                                   \
        return r;

/* The extreme of a row: NAME(x, n), n >= 1, is the largest (CMP >) or smallest (CMP <) of
 * x[0:n], or its first NaN when it holds one.
 *
 * In GD_VEC_BYTES vectors of GCC's vector extensions, two at a time, with the NaNs tracked
 * in a mask beside the extremes: each step is compares and a blend. A scalar loop of GD_FMAX
 * with 32 accumulators ran at half this speed or less in the AVX2 clone (a 256x256 float32
 * max(axis=1): 26 us, now 10 us; NumPy 27 us; on an AVX2-only EPYC, 65 us). A NaN
 * never enters the extremes (it beats nothing), so they only need combining when the mask
 * is clear. Rows shorter than two vectors (a softmax over 10 classes) take the scalar tail,
 * which compiles to max and min instructions: no branch to mispredict. */
#if GD_HAS_VECTORS
#define GD_DEFINE_EXTREME(NAME, T, CMP)                                                          \
    GD_SIMD static T NAME(const T *x, int64_t n)                                                 \
    {                                                                                            \
        GD_VECTOR_TYPEDEF(vec, T, GD_VEC_BYTES);                                                 \
        GD_VECTOR_TYPEDEF(mvec, gd_mask_of_##T, GD_VEC_BYTES);                                   \
        enum { W = (int)(sizeof(vec) / sizeof(T)) };                                             \
        T r = x[0];                                                                              \
        mvec nan = {0};                                                                          \
        int64_t i = 0;                                                                           \
        if (n >= 2 * W) {                                                                        \
            vec a, b;                                                                            \
            memcpy(&a, x, sizeof a);                                                             \
            memcpy(&b, x + W, sizeof b);                                                         \
            for (; i + 2 * W <= n; i += 2 * W) {                                                 \
                vec u, v;                                                                        \
                memcpy(&u, x + i, sizeof u);                                                     \
                memcpy(&v, x + i + W, sizeof v);                                                 \
                const mvec ku = (mvec)(u CMP a), kv = (mvec)(v CMP b);                           \
                nan |= (mvec)(u != u) | (mvec)(v != v);                                          \
                a = GD_VSEL(ku, u, a);                                                           \
                b = GD_VSEL(kv, v, b);                                                           \
            }                                                                                    \
            const mvec k = (mvec)(b CMP a);                                                      \
            a = GD_VSEL(k, b, a);                                                                \
            r = a[0];                                                                            \
            for (int j = 1; j < W; j++) r = a[j] CMP r ? a[j] : r;                               \
        }                                                                                        \
        int any = 0;                                                                             \
        for (int j = 0; j < W; j++) any |= nan[j] != 0;                                          \
        GD_EXTREME_TAIL(T, CMP)                                                                  \
    }
#else
/* Without vector extensions (compiler.h): the same scheme in plain C, 2 * GD_VEC_BYTES of
 * lanes in an array, each with its extreme and NaN flag, a loop over them that compilers
 * vectorize. */
#define GD_DEFINE_EXTREME(NAME, T, CMP)                                                          \
    GD_SIMD static T NAME(const T *x, int64_t n)                                                 \
    {                                                                                            \
        enum { L = (int)(2 * GD_VEC_BYTES / sizeof(T)) };                                        \
        T r = x[0];                                                                              \
        int any = 0;                                                                             \
        int64_t i = 0;                                                                           \
        if (n >= L) {                                                                            \
            T a[L];                                                                              \
            unsigned char nan[L] = {0};                                                          \
            memcpy(a, x, sizeof a);                                                              \
            for (; i + L <= n; i += L)                                                           \
                for (int j = 0; j < L; j++) {                                                    \
                    const T v = x[i + j];                                                        \
                    nan[j] |= v != v;                                                            \
                    a[j] = v CMP a[j] ? v : a[j];                                                \
                }                                                                                \
            for (int j = 0; j < L; j++) {                                                        \
                any |= nan[j];                                                                   \
                r = a[j] CMP r ? a[j] : r;                                                       \
            }                                                                                    \
        }                                                                                        \
        GD_EXTREME_TAIL(T, CMP)                                                                  \
    }
#endif

/* The integer of each type's width that vector compares give (GD_DEFINE_EXTREME, argreduce.c). */
typedef int32_t gd_mask_of_float;
typedef int64_t gd_mask_of_double;
typedef int64_t gd_mask_of_int64_t;
typedef int32_t gd_mask_of_int32_t;
typedef int8_t gd_mask_of_uint8_t;

/* float -> int64 as C casts, except NaN, infinities and values outside int64's range, which C
 * leaves undefined: they become INT64_MIN, what NumPy gives on x86-64. */
#define GD_F2I(x) (((x) >= -0x1p63 && (x) < 0x1p63) ? (int64_t)(x) : INT64_MIN)
/* The same for int32: INT32_MIN outside [-2**31, 2**31), as NumPy gives on x86-64. */
#define GD_F2I32(x) (((x) >= -0x1p31 && (x) < 0x1p31) ? (int32_t)(x) : INT32_MIN)

/* An accumulator or scalar of any dtype in one 8-byte word. */
typedef union gd_word {
    double d;
    int64_t i;
    uint64_t u;
    float f;
    int32_t i32;
    uint8_t b; /* bool */
} gd_word;

/* ------------------------------------------------------------------------------------------
 * shared helpers
 * ---------------------------------------------------------------------------------------- */

/* GD_ERR_VALUE naming `op` and a dtype this entry does not take (or an unknown code). Here,
 * not in backend_cpu.c: the kernel files are below the table that lists them. */
static inline int gd_cpu_bad_dtype(gd_error *err, const char *op, int dtype)
{
    if ((unsigned)dtype < GD_NUM_DTYPES)
        return gd_set_error(err, GD_ERR_VALUE, "%s: dtype %s is not supported by the CPU backend here", op,
                            gd_dtype_name((gd_dtype)dtype));
    return gd_set_error(err, GD_ERR_VALUE, "%s: unknown dtype code %d (expected 0..%d)", op, dtype,
                        GD_NUM_DTYPES - 1);
}

/* memcpy, split over threads for copies of several MiB (copy.c). */
void gd_copy_bytes(void *dst, const void *src, size_t nbytes);

/* ------------------------------------------------------------------------------------------
 * vtable entries, by file (signatures and contracts in gpudev.h)
 * ---------------------------------------------------------------------------------------- */

/* backend_cpu.c */
gd_device_count_fn gd_cpu_device_count;
gd_synchronize_fn gd_cpu_synchronize;

/* chase.c */
gd_pointer_chase_fn gd_cpu_pointer_chase;

/* memory.c */
gd_alloc_fn gd_cpu_alloc;
gd_free_fn gd_cpu_free;
gd_memory_stats_fn gd_cpu_get_memory_stats;
gd_reset_peak_memory_fn gd_cpu_reset_peak_memory;
gd_empty_cache_fn gd_cpu_empty_cache;

/* copy.c */
gd_copy_from_host_fn gd_cpu_copy_from_host;
gd_copy_to_host_fn gd_cpu_copy_to_host;
gd_copy_device_fn gd_cpu_copy_device;
gd_copy_2d_fn gd_cpu_copy_2d;

/* elementwise.c */
gd_unary_fn gd_cpu_unary;
gd_binary_fn gd_cpu_binary;

/* elementwise.c: where and axpby; argreduce.c: argmax and argmin */
gd_where_fn gd_cpu_where;
gd_axpby_fn gd_cpu_axpby;
gd_argreduce_fn gd_cpu_argreduce;

/* cast.c */
gd_astype_fn gd_cpu_astype;

/* reduce.c */
gd_reduce_fn gd_cpu_reduce;

/* gemm.c */
gd_gemm_fn gd_cpu_gemm;

/* permute.c */
gd_permute_fn gd_cpu_permute;

/* generate.c */
gd_arange_fn gd_cpu_arange;
gd_random_fn gd_cpu_random;

/* gather.c: indexing that copies */
gd_gather_rows_fn gd_cpu_gather_rows;
gd_scatter_rows_fn gd_cpu_scatter_rows;
gd_scatter_add_rows_fn gd_cpu_scatter_add_rows;
gd_count_nonzero_fn gd_cpu_count_nonzero;
gd_nonzero_fn gd_cpu_nonzero;

/* window.c: convolution's im2col and col2im, pooling */
gd_im2col_fn gd_cpu_im2col;
gd_col2im_fn gd_cpu_col2im;
gd_pool2d_fn gd_cpu_pool2d;
gd_pool2d_backward_fn gd_cpu_pool2d_backward;

#endif /* GPUDEV_CPU_H */
